import { createPublicKey } from 'node:crypto';
import type { TestingModule } from '@nestjs/testing';
import type { JWK } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { KeysModule } from '../../src/keys/keys.module.js';
import { KeysService } from '../../src/keys/keys.service.js';
import { startTestingModule } from '../factories/testing-module.js';
import { createTestDatabase, query } from '../setup/database.js';

interface KeyRow {
  kid: string;
  alg: string;
  private_key_pem: string;
  retired_at: Date | null;
  expires_at: Date | null;
}

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi'];
const RETIRED_KEY_LIFETIME_MS = 3_600_000;

describe('KeysService', () => {
  const started: TestingModule[] = [];
  const start = async (url: string, vars: Record<string, string> = {}) => {
    const app = await startTestingModule(url, KeysModule, vars);
    started.push(app);
    return app.get(KeysService);
  };
  afterEach(async () => {
    await Promise.all(started.splice(0).map((app) => app.close()));
  });

  const storedKeys = (url: string) => query<KeyRow>(url, 'SELECT * FROM signing_keys ORDER BY created_at');
  const activeKeys = async (url: string) => (await storedKeys(url)).filter((key) => key.retired_at === null);

  /** The JWK holds public members only, and they are the public half of the stored private key. */
  const expectPublicHalfOf = (jwk: JWK, row: KeyRow) => {
    expect(Object.keys(jwk).filter((member) => PRIVATE_MEMBERS.includes(member))).toEqual([]);
    const { kid, alg, use, ...publicMembers } = jwk;
    expect({ kid, alg, use }).toEqual({ kid: row.kid, alg: row.alg, use: 'sig' });
    expect(createPublicKey(row.private_key_pem).export({ format: 'jwk' })).toEqual(publicMembers);
  };

  it('starts with exactly one active ES256 key, published without its private part', async () => {
    const url = await createTestDatabase();
    const keys = await start(url);
    const [active, ...others] = await storedKeys(url);
    expect(others).toEqual([]);
    expect(active).toMatchObject({ alg: 'ES256', retired_at: null, expires_at: null });
    const { keys: published } = await keys.jwks();
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({ kty: 'EC', crv: 'P-256', kid: active.kid, alg: 'ES256', use: 'sig' });
    expectPublicHalfOf(published[0], active);
  });

  it('keeps the active key when restarted with the same SIGNING_ALG', async () => {
    const url = await createTestDatabase();
    await start(url);
    const [first] = await storedKeys(url);
    await start(url);
    expect(await storedKeys(url)).toEqual([first]);
  });

  it('rotates to a new active key, publishing the old one for an hour more', async () => {
    const url = await createTestDatabase();
    const keys = await start(url);
    const [old] = await storedKeys(url);
    const before = Date.now();
    const rotated = await keys.rotate();
    const after = Date.now();

    expect(rotated).toMatchObject({ alg: 'ES256', retired: { kid: old.kid } });
    expect(rotated.kid).not.toBe(old.kid);
    const stored = await storedKeys(url);
    expect(stored.filter((key) => key.retired_at === null).map((key) => key.kid)).toEqual([rotated.kid]);
    const retired = stored.find((key) => key.kid === old.kid)!;
    expect(retired.retired_at!.getTime()).toBeGreaterThanOrEqual(before);
    expect(retired.expires_at!.getTime()).toBeGreaterThanOrEqual(before + RETIRED_KEY_LIFETIME_MS);
    expect(retired.expires_at!.getTime()).toBeLessThanOrEqual(after + RETIRED_KEY_LIFETIME_MS);
    expect(rotated.retired!.expires_at).toBe(retired.expires_at!.toISOString());

    const published = (await keys.jwks()).keys.map((jwk) => jwk.kid);
    expect(published.sort()).toEqual([old.kid, rotated.kid].sort());
  });

  it('drops a retired key from the JWKS once its expires_at has passed', async () => {
    const url = await createTestDatabase();
    const keys = await start(url);
    const [old] = await storedKeys(url);
    const { kid: current } = await keys.rotate();
    await query(url, `UPDATE signing_keys SET expires_at = now() - interval '1 second' WHERE kid = $1`, [old.kid]);
    expect((await keys.jwks()).keys.map((jwk) => jwk.kid)).toEqual([current]);
  });

  it('replaces an active ES256 key with an RS256 one when started with SIGNING_ALG=RS256', async () => {
    const url = await createTestDatabase();
    await start(url);
    const [es256] = await storedKeys(url);
    const keys = await start(url, { SIGNING_ALG: 'RS256' });

    const [active, ...otherActive] = await activeKeys(url);
    expect(otherActive).toEqual([]);
    expect(active.alg).toBe('RS256');
    const published = (await keys.jwks()).keys;
    const rsa = published.find((jwk) => jwk.kid === active.kid)!;
    expect(rsa).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', n: expect.any(String), e: expect.any(String) });
    expectPublicHalfOf(rsa, active);
    // Tokens signed with the replaced key stay verifiable until they expire.
    expect(published.map((jwk) => jwk.kid)).toContain(es256.kid);
  });

  it('creates a single key when two instances start at once on a fresh database', async () => {
    const url = await createTestDatabase();
    // RS256: generating an RSA key takes long enough for the two starts to overlap.
    const vars = { SIGNING_ALG: 'RS256' };
    const [first, second] = await Promise.all([start(url, vars), start(url, vars)]);
    const stored = await storedKeys(url);
    expect(stored).toHaveLength(1);
    expect(stored[0].retired_at).toBeNull();
    expect((await first.jwks()).keys.map((jwk) => jwk.kid)).toEqual([stored[0].kid]);
    expect((await second.jwks()).keys.map((jwk) => jwk.kid)).toEqual([stored[0].kid]);
  });
});
