import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../../src', import.meta.url));

/** Only src/grants/ writes these tables (STYLE.md, "One owner per table"); the others ask it. */
const OWNED_TABLES = ['grants', 'refresh_tokens'];
const OWNER = 'grants/';

/** A write to an owned table, as this code base spells SQL: keywords in capitals, the table right after them. */
const WRITE = new RegExp(String.raw`\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|TRUNCATE(?:\s+TABLE)?)\s+(?:ONLY\s+)?(?:public\.)?"?(${OWNED_TABLES.join('|')})"?(?![\w.])`, 'g');

const sourceFiles = (folder: string): string[] =>
  readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });

/** `file:line: statement` for each write to an owned table in src/ outside its owner. */
function writesOutsideOwner(): string[] {
  return sourceFiles(SRC)
    .map((path) => ({ file: relative(SRC, path).split('\\').join('/'), text: readFileSync(path, 'utf8') }))
    .filter(({ file }) => !file.startsWith(OWNER))
    .flatMap(({ file, text }) =>
      [...text.matchAll(WRITE)].map((match) => `src/${file}:${text.slice(0, match.index).split('\n').length}: ${match[0].replace(/\s+/g, ' ')}`),
    );
}

describe('the grants and refresh_tokens tables', () => {
  it('are written (INSERT, UPDATE, DELETE) from src/grants/ only', () => {
    expect(writesOutsideOwner()).toEqual([]);
  });

  it('are found by the check however the statement is spelled', () => {
    const spellings = ['INSERT INTO grants (id)', 'UPDATE grants SET revoked_at', 'DELETE FROM refresh_tokens WHERE', 'UPDATE\n       refresh_tokens r SET', 'TRUNCATE grants'];
    for (const sql of spellings) expect(sql.match(WRITE), sql).not.toBeNull();
    // Reads, and other tables whose names begin alike, are not writes to them.
    for (const sql of ['SELECT 1 FROM grants', 'UPDATE grants_archive SET x', 'UPDATE authorization_codes SET grant_id = $2']) expect(sql.match(WRITE), sql).toBeNull();
  });
});
