import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** Every `file › name` reference of docs/guarantees.md. */
const references = [...readFileSync(join(ROOT, 'docs/guarantees.md'), 'utf8').matchAll(/`(test\/[^`]+\.test\.ts)` › (.+?) \|\s*$/gm)].map(([, file, name]) => ({ file, name }));

/** docs/guarantees.md maps each promise to a test: the tests it names must exist, or the promise stands untested. */
describe('docs/guarantees.md', () => {
  it('names tests', () => {
    expect(references.length).toBeGreaterThan(20);
  });

  it.each(references)('$file holds a test named "$name"', ({ file, name }) => {
    expect(existsSync(join(ROOT, file)), `${file} exists`).toBe(true);
    const tests = [...readFileSync(join(ROOT, file), 'utf8').matchAll(/\b(?:it|describe)(?:\.each\([^)]*\))?\(\s*(['"`])(.*?)\1/g)].map(([, , title]) => title);
    expect(tests.some((title) => title.includes(name)), `a test in ${file} whose name contains "${name}"`).toBe(true);
  });
});
