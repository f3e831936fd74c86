import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getMetadataStorage } from 'class-validator';
import { describe, expect, it } from 'vitest';
import { Env } from '../../../src/config/env.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** The README and the manual: the documentation a reader of a clone gets. */
const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** Markdown without fenced code blocks and inline code, where `](…)` and `#` mean nothing. */
const prose = (text: string) => text.replace(/^(```|~~~)[\s\S]*?^\1/gm, '').replace(/`[^`\n]*`/g, (code) => code.replace(/[[\]()#]/g, ' '));

/** Targets of inline links `[text](target)` and reference definitions `[label]: target`. */
function linkTargets(text: string): string[] {
  const inline = [...prose(text).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map(([, target]) => target);
  const references = [...prose(text).matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map(([, target]) => target);
  return [...inline, ...references];
}

const isExternal = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target);

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  const text = markdown.replace(/^(```|~~~)[\s\S]*?^\1/gm, '');
  for (const [, heading] of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .trim()
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

describe('documentation links', () => {
  it('finds the manual', () => {
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/README.md', 'docs/http-api.md', 'docs/notification-stream.md', 'docs/errors.md', 'docs/configuration.md']));
  });

  it.each(files)('%s: every relative link leads to a file of the repository, and every anchor to a heading', (file) => {
    const broken: string[] = [];
    for (const target of linkTargets(read(file))) {
      if (isExternal(target)) continue;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const resolved = path === '' ? join(ROOT, file) : resolve(ROOT, dirname(file), decodeURI(path));
      const inside = relative(ROOT, resolved);
      if (inside.startsWith('..') || resolve(ROOT, inside) !== resolved) broken.push(`${target}: outside the repository`);
      else if (!existsSync(resolved)) broken.push(`${target}: no such file`);
      else if (anchor && resolved.endsWith('.md') && !anchors(readFileSync(resolved, 'utf8')).has(anchor)) broken.push(`${target}: no such heading`);
    }
    expect(broken).toEqual([]);
  });

  it.each(files)('%s: names nothing a reader of a clone cannot follow', (file) => {
    const text = read(file);
    expect(text).not.toMatch(/\.\.\/shared/);
    expect(text).not.toMatch(/seed 00/i);
  });

  it('describes every configuration variable in docs/configuration.md', () => {
    const configuration = read('docs/configuration.md');
    const variables = new Set(getMetadataStorage().getTargetValidationMetadatas(Env, '', false, false).map((meta) => meta.propertyName));
    expect(variables.size).toBeGreaterThan(40);
    expect([...variables].filter((name) => !configuration.includes(`| \`${name}\` |`))).toEqual([]);
  });
});
