import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { displayUserCode, generateUserCode, normalizeUserCode, USER_CODE_ALPHABET } from '../../../src/device-flow/user-code.js';

describe('user codes (RFC 8628 §6.1)', () => {
  it('are 8 of the 20 consonants, shown as XXXX-XXXX', () => {
    const code = generateUserCode();
    expect(code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{8}$/);
    expect(displayUserCode(code)).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
  });

  it('use every letter of the alphabet', () => {
    const seen = new Set(Array.from({ length: 400 }, generateUserCode).join(''));
    expect([...seen].sort().join('')).toBe(USER_CODE_ALPHABET);
  });

  it.each([
    ['BCDF-GHJK', 'BCDFGHJK'],
    ['bcdfghjk', 'BCDFGHJK'],
    [' bcdf ghjk ', 'BCDFGHJK'],
    ['bc-df-gh-jk', 'BCDFGHJK'],
    ['\u00a0BCDF\u2011GHJK\u00a0', 'BCDFGHJK'],
    ['BCDF\u2013GHJK', 'BCDFGHJK'],
  ])('reads %j as %s', (typed, stored) => {
    expect(normalizeUserCode(typed)).toBe(stored);
  });

  it.each(['', 'BCDFGHJ', 'BCDFGHJKL', 'ABCDEFGH', 'BCDF1HJK', 'BCDF\u0000HJK', 'BCDF_GHJK', `${'-'.repeat(100)}BCDFGHJK`])('refuses %j', (typed) => {
    expect(normalizeUserCode(typed)).toBeNull();
  });

  it('reads back every displayed code, in any case', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...USER_CODE_ALPHABET), minLength: 8, maxLength: 8 }), fc.boolean(), (code, lower) => {
        const shown = displayUserCode(code);
        expect(normalizeUserCode(lower ? shown.toLowerCase() : shown)).toBe(code);
      }),
      { seed: 20261124 },
    );
  });
});
