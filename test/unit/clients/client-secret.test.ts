import * as crypto from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';

vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:crypto')>();
  return { ...actual, timingSafeEqual: vi.fn(actual.timingSafeEqual) };
});

const { generateClientId, generateClientSecret, hashClientSecret, secretMatchesHash } = await import('../../../src/clients/client-secret.js');

describe('client secrets', () => {
  afterEach(() => vi.mocked(crypto.timingSafeEqual).mockClear());

  it('are 256 random bits, base64url, different every time', () => {
    const secrets = new Set(Array.from({ length: 100 }, generateClientSecret));
    expect(secrets.size).toBe(100);
    for (const secret of secrets) expect(Buffer.from(secret, 'base64url')).toHaveLength(32);
  });

  it('come with ids of 128 random bits that never start with "-" (the CLI would read one as an option)', () => {
    const ids = Array.from({ length: 5_000 }, generateClientId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
  });

  it('are stored as their SHA-256 digest, never as text', () => {
    const secret = generateClientSecret();
    const stored = hashClientSecret(secret);
    expect(stored).toHaveLength(32);
    expect(stored.toString('hex')).toBe(crypto.createHash('sha256').update(secret).digest('hex'));
    expect(stored.toString('utf8')).not.toContain(secret);
  });

  it('compare fixed-length digests in constant time, for right, near-miss and wrong secrets alike', () => {
    const secret = generateClientSecret();
    const stored = hashClientSecret(secret);
    const nearMiss = `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
    expect([secretMatchesHash(secret, stored), secretMatchesHash(nearMiss, stored), secretMatchesHash('x', stored)]).toEqual([true, false, false]);
    const calls = vi.mocked(crypto.timingSafeEqual).mock.calls;
    expect(calls).toHaveLength(3);
    for (const [a, b] of calls) expect([(a as Buffer).length, (b as Buffer).length]).toEqual([32, 32]);
  });
});
