import { describe, expect, it } from 'vitest';
import { parseTrustProxy } from '../../../src/app.js';

describe('parseTrustProxy', () => {
  it('reads booleans, address lists and hop counts', () => {
    expect(parseTrustProxy('false')).toBe(false);
    expect(parseTrustProxy('true')).toBe(true);
    expect(parseTrustProxy('10.0.0.1, 192.168.0.0/16')).toEqual(['10.0.0.1', '192.168.0.0/16']);
    const hops = parseTrustProxy('2') as (address: string, hop: number) => boolean;
    expect([0, 1, 2].map((hop) => hops('10.0.0.1', hop))).toEqual([true, true, false]);
  });
});
