import { readFileSync } from 'node:fs';
import { getMetadataStorage } from 'class-validator';
import { describe, expect, it } from 'vitest';
import { Env, loadEnv } from '../../../src/config/env.js';

const example = readFileSync(new URL('../../../.env.example', import.meta.url), 'utf8');
const entries = example
  .split('\n')
  .map((line, index, lines) => ({ line, comment: lines[index - 1] ?? '' }))
  .filter(({ line }) => /^[A-Z_]+=/.test(line));

describe('.env.example', () => {
  it('lists every configuration variable, each once, with a description above it', () => {
    const documented = entries.map(({ line }) => line.split('=')[0]);
    const declared = getMetadataStorage()
      .getTargetValidationMetadatas(Env, '', false, false)
      .map((meta) => meta.propertyName);
    expect(new Set(documented).size).toBe(documented.length);
    expect([...documented].sort()).toEqual([...new Set(declared)].sort());
    for (const { comment } of entries) expect(comment).toMatch(/^# \S/);
  });

  it('shows the real defaults', () => {
    const defaults = loadEnv({}) as unknown as Record<string, unknown>;
    for (const { line } of entries) {
      const [key, value] = line.split(/=(.*)/);
      expect(String(defaults[key] ?? ''), key).toBe(value);
    }
  });
});
