import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from '../../../src/common/http/json-body-parser.js';

const deeper = (json: string, limit: number) => nestsDeeperThan(Buffer.from(json), limit);

describe('nestsDeeperThan', () => {
  it('counts arrays and objects together, up to the limit included', () => {
    expect(deeper('{"a":[{"b":[1]}]}', 4)).toBe(false);
    expect(deeper('{"a":[{"b":[1]}]}', 3)).toBe(true);
    expect(deeper('1', 0)).toBe(false);
    expect(deeper('[]', 0)).toBe(true);
  });

  it('measures the deepest point, not the number of brackets', () => {
    expect(deeper(`[${'[1],'.repeat(10_000)}[2]]`, 2)).toBe(false);
  });

  it('ignores brackets inside strings, escaped quotes and backslashes included', () => {
    expect(deeper('["[[[[", "{{{{"]', 1)).toBe(false);
    expect(deeper('["\\"[[[[", "\\\\", "{{"]', 1)).toBe(false);
    expect(deeper('["\\\\", [[1]]]', 2)).toBe(true);
  });

  it('reads multi-byte characters as the string bytes they are', () => {
    expect(deeper('["é€😀[[", {"ключ": ["значение"]}]', 3)).toBe(false);
  });

  it('handles a 100,000-deep body without recursion', () => {
    expect(deeper(`${'['.repeat(100_000)}${']'.repeat(100_000)}`, 32)).toBe(true);
  });
});
