import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import type { TestingModule } from '@nestjs/testing';
import { decodeProtectedHeader, type JWK, SignJWT } from 'jose';
import { DataSource } from 'typeorm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { dataSourceOptions } from '../../../src/database/data-source.js';
import { InvalidJwt, JwtSignerService } from '../../../src/keys/jwt-signer.service.js';
import { KeyAdminService } from '../../../src/keys/key-admin.service.js';
import { open } from '../../../src/keys/key-encryption.js';
import { KeysInstanceModule } from '../../../src/keys/keys-instance.module.js';
import { KeysModule } from '../../../src/keys/keys.module.js';
import { KeysRepository } from '../../../src/keys/keys.repository.js';
import { KeysService } from '../../../src/keys/keys.service.js';
import { type SigningAlg, SigningKeyEntity } from '../../../src/keys/signing-key.entity.js';
import { type StoredKeyRow, storedKeys } from '../../factories/signing-keys.factory.js';
import { startTestingModule } from '../../factories/testing-module.js';
import { createTestDatabase, query } from '../../setup/database.js';


const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi'];
const RETIRED_KEY_LIFETIME_MS = 3_600_000;
const KEK = randomBytes(32);
const OTHER_KEK = randomBytes(32);
const ISSUER = 'https://id.example';
/** Rotations sign with the new key at once, as they did before KEY_ACTIVATION_DELAY: for tests about something else. */
const SIGN_AT_ONCE = { KEY_ACTIVATION_DELAY: '0' };

describe('KeysService', () => {
  const started: TestingModule[] = [];
  /** A service instance's keys (KeysInstanceModule: what runs at start) on the database at `url`. */
  const start = async (url: string, vars: Record<string, string> = {}) => {
    const app = await startTestingModule(url, KeysInstanceModule, vars);
    started.push(app);
    return app;
  };
  const stop = async (app: TestingModule) => {
    started.splice(started.indexOf(app), 1);
    await app.close();
  };
  const startKeys = async (url: string, vars: Record<string, string> = {}) => (await start(url, vars)).get(KeysService);
  afterEach(async () => {
    vi.useRealTimers();
    vi.restoreAllMocks();
    await Promise.all(started.splice(0).map((app) => app.close()));
  });

  const activeKeys = async (url: string) => (await storedKeys(url)).filter((key) => key.retired_at === null);
  /** The one key of `alg` that neither retires nor was revoked. */
  const activeKey = async (url: string, alg: SigningAlg) => {
    const [key, ...others] = (await activeKeys(url)).filter((row) => row.alg === alg);
    expect(others).toEqual([]);
    return key;
  };
  /** A rotation of the ES256 key only: for tests about the life of one key. */
  const rotateEs256 = async (app: TestingModule) => {
    const [rotated, ...others] = await app.get(KeyAdminService).rotate('ES256');
    expect(others).toEqual([]);
    return rotated;
  };
  const publishedKids = async (app: TestingModule) => (await app.get(KeysService).jwks()).keys.map((jwk) => jwk.kid).sort();
  const privatePem = (row: StoredKeyRow, kek = KEK) => row.private_key_pem ?? open(kek, row.kid, row.private_key_encrypted!);

  /** The JWK holds public members only, and they are the public half of the stored private key. */
  const expectPublicHalfOf = (jwk: JWK, row: StoredKeyRow) => {
    expect(Object.keys(jwk).filter((member) => PRIVATE_MEMBERS.includes(member))).toEqual([]);
    const { kid, alg, use, ...publicMembers } = jwk;
    expect({ kid, alg, use }).toEqual({ kid: row.kid, alg: row.alg, use: 'sig' });
    expect(createPublicKey(privatePem(row)).export({ format: 'jwk' })).toEqual(publicMembers);
  };

  /** Signs as access tokens are (SIGNING_ALG), or with `alg`, and verifies the token; the kid and alg of the key that signed. */
  const signAndVerify = async (app: TestingModule, alg?: SigningAlg) => {
    const signer = app.get(JwtSignerService);
    const token = await signer.sign({ iss: ISSUER, sub: 'device' }, { typ: 'at+jwt', expiresInSeconds: 60, alg });
    return { ...(await signer.verifyWithKid<{ sub: string }>(token, { typ: 'at+jwt', issuer: ISSUER })), alg: decodeProtectedHeader(token).alg };
  };

  it('starts with one active key of each of ES256 and RS256, both signing at once and published without their private parts', async () => {
    const url = await createTestDatabase();
    const app = await start(url);
    const stored = await storedKeys(url);
    expect(stored).toMatchObject([
      { alg: 'ES256', retired_at: null, expires_at: null, revoked_at: null, retired_lifetime_seconds: 3600 },
      { alg: 'RS256', retired_at: null, expires_at: null, revoked_at: null, retired_lifetime_seconds: 3600 },
    ]);
    for (const row of stored) expect(row.activates_at).toEqual(row.created_at);
    const [es256, rs256] = stored;
    const { keys: published } = await app.get(KeysService).jwks();
    expect(published).toHaveLength(2);
    expect(published[0]).toMatchObject({ kty: 'EC', crv: 'P-256', kid: es256.kid, alg: 'ES256', use: 'sig' });
    expect(published[1]).toMatchObject({ kty: 'RSA', kid: rs256.kid, alg: 'RS256', use: 'sig', n: expect.any(String), e: expect.any(String) });
    expectPublicHalfOf(published[0], es256);
    expectPublicHalfOf(published[1], rs256);
    // Access tokens (no alg named) as before: SIGNING_ALG, ES256 by default.
    expect(await signAndVerify(app)).toMatchObject({ kid: es256.kid, alg: 'ES256' });
    expect(await signAndVerify(app, 'RS256')).toMatchObject({ kid: rs256.kid, alg: 'RS256' });
    expect(await signAndVerify(app, 'ES256')).toMatchObject({ kid: es256.kid, alg: 'ES256' });
  });

  it('keeps the active keys when restarted', async () => {
    const url = await createTestDatabase();
    await start(url);
    const before = await storedKeys(url);
    await start(url);
    expect(await storedKeys(url)).toEqual(before);
  });

  it('signs with a prepared key of each algorithm asked for, and refuses an algorithm it was not prepared for', async () => {
    const url = await createTestDatabase();
    const app = await start(url);
    const [es256, rs256] = await storedKeys(url);
    const signer = app.get(JwtSignerService);
    const both = await signer.prepare(['RS256']);
    const kidOf = (token: string) => decodeProtectedHeader(token).kid;
    expect(kidOf(await both.sign({ iss: ISSUER }, { typ: 'at+jwt', expiresInSeconds: 60 }))).toBe(es256.kid);
    expect(kidOf(await both.sign({ iss: ISSUER }, { typ: 'JWT', expiresInSeconds: 60, alg: 'RS256' }))).toBe(rs256.kid);
    const accessOnly = await signer.prepare();
    await expect(accessOnly.sign({ iss: ISSUER }, { typ: 'JWT', expiresInSeconds: 60, alg: 'RS256' })).rejects.toThrow('no RS256 key was prepared');
  });

  it('creates no key when only KeysModule starts, as in the CLI', async () => {
    const url = await createTestDatabase();
    await startTestingModule(url, KeysModule).then((app) => started.push(app));
    expect(await storedKeys(url)).toEqual([]);
  });

  it('rotates the key of each algorithm to a new one that signs at once with KEY_ACTIVATION_DELAY=0, publishing the old ones for an hour more', async () => {
    const url = await createTestDatabase();
    const app = await start(url, SIGN_AT_ONCE);
    const old = await storedKeys(url);
    const before = Date.now();
    const rotated = await app.get(KeyAdminService).rotate();
    const after = Date.now();

    expect(rotated).toMatchObject([
      { alg: 'ES256', retired: { kid: old[0].kid } },
      { alg: 'RS256', retired: { kid: old[1].kid } },
    ]);
    const stored = await storedKeys(url);
    expect(stored.filter((key) => key.retired_at === null).map((key) => key.kid)).toEqual(rotated.map((key) => key.kid));
    for (const [index, { kid }] of old.entries()) {
      const retired = stored.find((key) => key.kid === kid)!;
      expect(retired.retired_at!.getTime()).toBeGreaterThanOrEqual(before);
      expect(retired.expires_at!.getTime()).toBeGreaterThanOrEqual(before + RETIRED_KEY_LIFETIME_MS);
      expect(retired.expires_at!.getTime()).toBeLessThanOrEqual(after + RETIRED_KEY_LIFETIME_MS);
      expect(rotated[index].retired.expires_at).toBe(retired.expires_at!.toISOString());
    }

    expect(await publishedKids(app)).toEqual([...old, ...rotated].map((key) => key.kid).sort());
    expect((await signAndVerify(app)).kid).toBe(rotated[0].kid);
    expect((await signAndVerify(app, 'RS256')).kid).toBe(rotated[1].kid);
  });

  it('rotates the key of one algorithm with its name, leaving the other signing', async () => {
    const url = await createTestDatabase();
    const app = await start(url, SIGN_AT_ONCE);
    const [es256, rs256] = await storedKeys(url);
    const [rotated, ...others] = await app.get(KeyAdminService).rotate('RS256');
    expect(others).toEqual([]);
    expect(rotated).toMatchObject({ alg: 'RS256', retired: { kid: rs256.kid } });
    expect((await activeKeys(url)).map((key) => key.kid)).toEqual([es256.kid, rotated.kid]);
    expect((await signAndVerify(app)).kid).toBe(es256.kid);
    expect((await signAndVerify(app, 'RS256')).kid).toBe(rotated.kid);
  });

  it('drops a retired key from the JWKS once its expires_at has passed', async () => {
    const url = await createTestDatabase();
    const app = await start(url);
    const [old, rs256] = await storedKeys(url);
    const { kid: current } = await rotateEs256(app);
    await query(url, `UPDATE signing_keys SET expires_at = now() - interval '1 second' WHERE kid = $1`, [old.kid]);
    expect(await publishedKids(app)).toEqual([current, rs256.kid].sort());
  });

  it('signs access tokens with the RS256 key when restarted with SIGNING_ALG=RS256, making and retiring no key', async () => {
    const url = await createTestDatabase();
    await start(url);
    const before = await storedKeys(url);
    const app = await start(url, { SIGNING_ALG: 'RS256' });

    expect(await storedKeys(url)).toEqual(before);
    expect(await signAndVerify(app)).toMatchObject({ kid: before[1].kid, alg: 'RS256' });
    expect(await signAndVerify(app, 'ES256')).toMatchObject({ kid: before[0].kid, alg: 'ES256' });
  });

  it('creates one key per algorithm when two instances start at once on a fresh database', async () => {
    const url = await createTestDatabase();
    // Generating the RSA key takes long enough for the two starts to overlap.
    const [first, second] = await Promise.all([startKeys(url), startKeys(url)]);
    const stored = await storedKeys(url);
    expect(stored.map((row) => ({ alg: row.alg, retired_at: row.retired_at }))).toEqual([
      { alg: 'ES256', retired_at: null },
      { alg: 'RS256', retired_at: null },
    ]);
    expect((await first.jwks()).keys.map((jwk) => jwk.kid)).toEqual(stored.map((row) => row.kid));
    expect((await second.jwks()).keys.map((jwk) => jwk.kid)).toEqual(stored.map((row) => row.kid));
  });

  describe('a database of the version with a single key', () => {
    /** A database as that version left it: its one ES256 key, made when it first started. */
    const singleKeyDatabase = async () => {
      const url = await createTestDatabase();
      await stop(await start(url));
      await query(url, "DELETE FROM signing_keys WHERE alg = 'RS256'");
      return url;
    };

    it('gains an RS256 key at the next start, signing at once, and keeps its ES256 key signing access tokens', async () => {
      const url = await singleKeyDatabase();
      const [es256] = await storedKeys(url);
      const app = await start(url, { KEY_ACTIVATION_DELAY: '3600' });
      const stored = await storedKeys(url);
      expect(stored.map((row) => row.kid)).toEqual([es256.kid, expect.any(String)]);
      const rs256 = stored[1];
      expect(rs256).toMatchObject({ alg: 'RS256', retired_at: null, retired_lifetime_seconds: 3600 });
      expect(rs256.activates_at).toEqual(rs256.created_at);
      expect(stored[0]).toEqual(es256);
      expect(await publishedKids(app)).toEqual([es256.kid, rs256.kid].sort());
      expect(await signAndVerify(app)).toMatchObject({ kid: es256.kid, alg: 'ES256' });
      expect(await signAndVerify(app, 'RS256')).toMatchObject({ kid: rs256.kid, alg: 'RS256' });
    });

    it('seals the RS256 key it gains when the ES256 key is sealed', async () => {
      const url = await createTestDatabase();
      await stop(await start(url, { KEYS_ENCRYPTION_KEY: KEK.toString('hex') }));
      await query(url, "DELETE FROM signing_keys WHERE alg = 'RS256'");
      const app = await start(url, { KEYS_ENCRYPTION_KEY: KEK.toString('hex') });
      const rs256 = await activeKey(url, 'RS256');
      expect(rs256.private_key_pem).toBeNull();
      expect(createPrivateKey(privatePem(rs256)).asymmetricKeyType).toBe('rsa');
      expect((await signAndVerify(app, 'RS256')).kid).toBe(rs256.kid);
    });

    it('keeps signing with a key whose retirement it set for a key of the other algorithm (a change of SIGNING_ALG), which signs from its activation', async () => {
      const url = await createTestDatabase();
      await stop(await start(url));
      // What that version's change of SIGNING_ALG left: the RS256 key waits to sign, the ES256 key signs until then.
      await query(url, "UPDATE signing_keys SET activates_at = now() + interval '1 hour' WHERE alg = 'RS256'");
      await query(url, "UPDATE signing_keys SET retired_at = now() + interval '1 hour', expires_at = now() + interval '2 hours' WHERE alg = 'ES256'");
      const before = await storedKeys(url);

      const app = await start(url);
      const after = await storedKeys(url);
      expect(after.map((row) => row.kid)).toEqual(before.map((row) => row.kid));
      expect(after[0]).toMatchObject({ alg: 'ES256', retired_at: null, expires_at: null });
      expect(after[1]).toEqual(before[1]);
      expect((await signAndVerify(app)).kid).toBe(before[0].kid);
      await expect(signAndVerify(app, 'RS256')).rejects.toThrow('cannot sign: no active RS256 signing key');
    });
  });

  describe('rotation publishes the new key before it signs (KEY_ACTIVATION_DELAY)', () => {
    it('signs with the first keys of an empty table at once', async () => {
      const url = await createTestDatabase();
      const app = await start(url, { KEY_ACTIVATION_DELAY: '3600' });
      const [es256, rs256] = await storedKeys(url);
      for (const first of [es256, rs256]) expect(first.activates_at).toEqual(first.created_at);
      expect((await signAndVerify(app)).kid).toBe(es256.kid);
      expect((await signAndVerify(app, 'RS256')).kid).toBe(rs256.kid);
    });

    it('publishes the new keys at once, keeps signing with the old ones until the activation, then with the new ones', async () => {
      const url = await createTestDatabase();
      const app = await start(url, { KEY_ACTIVATION_DELAY: '2' });
      const old = await storedKeys(url);
      const signingKids = async () => [(await signAndVerify(app)).kid, (await signAndVerify(app, 'RS256')).kid];
      expect(await signingKids()).toEqual(old.map((key) => key.kid)); // the ring is loaded

      const rotated = await app.get(KeyAdminService).rotate();
      const activatesAt = rotated[0].activates_at;
      expect(rotated.map((key) => key.activates_at)).toEqual([activatesAt, activatesAt]);
      const [{ activates_in: activatesIn }] = await query<{ activates_in: number }>(
        url,
        'SELECT extract(epoch FROM activates_at - now())::float8 AS activates_in FROM signing_keys WHERE kid = $1',
        [rotated[0].kid],
      );
      expect(activatesIn).toBeGreaterThan(1);
      expect(activatesIn).toBeLessThanOrEqual(2);
      expect(await publishedKids(app)).toEqual([...old, ...rotated].map((key) => key.kid).sort());
      expect(await signingKids()).toEqual(old.map((key) => key.kid));
      expect((await app.get(KeyAdminService).list()).map(({ kid, alg, status, retired_at }) => ({ kid, alg, status, retired_at }))).toEqual([
        { kid: rotated[0].kid, alg: 'ES256', status: 'pending', retired_at: null },
        { kid: rotated[1].kid, alg: 'RS256', status: 'pending', retired_at: null },
        { kid: old[0].kid, alg: 'ES256', status: 'active', retired_at: activatesAt },
        { kid: old[1].kid, alg: 'RS256', status: 'active', retired_at: activatesAt },
      ]);

      await new Promise((resolve) => setTimeout(resolve, Date.parse(activatesAt) + 1 - Date.now())); // +1: the printed time is cut to ms
      // A signing that waits for a read of the ring already under way at the activation may still
      // get the old key, late by that read's round trip (KeysService): on a loaded machine, a few
      // hundred milliseconds at most.
      await expect.poll(signingKids, { timeout: 1_000, interval: 20 }).toEqual(rotated.map((key) => key.kid));
      expect((await app.get(KeyAdminService).list()).map(({ status }) => status)).toEqual(['active', 'active', 'retired', 'retired']);
    });

    it('refuses a second rotation while a rotated key waits, changing nothing; the other algorithm rotates alone', async () => {
      const url = await createTestDatabase();
      const app = await start(url);
      const rotated = await rotateEs256(app);
      const before = await storedKeys(url);
      const refusal = { code: 'conflict', message: `key ${rotated.kid} already waits to sign, from ${rotated.activates_at}: rotate again once it signs` };
      await expect(app.get(KeyAdminService).rotate()).rejects.toMatchObject(refusal);
      await expect(app.get(KeyAdminService).rotate('ES256')).rejects.toMatchObject(refusal);
      expect(await storedKeys(url)).toEqual(before);
      expect(await app.get(KeyAdminService).rotate('RS256')).toMatchObject([{ alg: 'RS256' }]);
    });

    it('replaces a revoked signing key at once by the key waiting to replace it, making no other', async () => {
      const url = await createTestDatabase();
      const app = await start(url, { SIGNING_ALG: 'RS256', KEYS_ENCRYPTION_KEY: KEK.toString('hex') });
      const [es256, old] = await storedKeys(url);
      const [rotated] = await app.get(KeyAdminService).rotate('RS256');

      const revoked = await app.get(KeyAdminService).revoke(old.kid);
      expect(revoked.replaced_by).toMatchObject({ kid: rotated.kid, alg: 'RS256' });
      expect(Date.parse(revoked.replaced_by!.activates_at)).toBeLessThanOrEqual(Date.now());
      expect((await storedKeys(url)).map((row) => row.kid)).toEqual([es256.kid, old.kid, rotated.kid]);
      expect((await signAndVerify(app)).kid).toBe(rotated.kid);
      expect((await signAndVerify(app, 'ES256')).kid).toBe(es256.kid);
    });

    it('undoes a rotation whose key is revoked before it signs: the old key signs on, with no end', async () => {
      const url = await createTestDatabase();
      const app = await start(url);
      const [old, rs256] = await storedKeys(url);
      const rotated = await rotateEs256(app);

      expect(await app.get(KeyAdminService).revoke(rotated.kid)).toMatchObject({ kid: rotated.kid, status: 'revoked', replaced_by: null });
      expect((await storedKeys(url)).find((row) => row.kid === old.kid)).toMatchObject({ retired_at: null, expires_at: null, revoked_at: null });
      expect(await publishedKids(app)).toEqual([old.kid, rs256.kid].sort());
      expect((await signAndVerify(app)).kid).toBe(old.kid);
      expect((await rotateEs256(app)).retired.kid).toBe(old.kid); // and it can be rotated again
    });
  });

  describe('the lifetime a retired key stays published', () => {
    it("is stored with the key from the service's longest token lifetime, raised but never lowered by later starts", async () => {
      const url = await createTestDatabase();
      const lifetimes = async () => (await storedKeys(url)).map((row) => row.retired_lifetime_seconds);
      await start(url, { CLIENT_TOKEN_TTL: '7200' });
      expect(await lifetimes()).toEqual([7200, 7200]);
      await start(url, { CLIENT_TOKEN_TTL: '600' });
      expect(await lifetimes()).toEqual([7200, 7200]);
      await start(url, { CLIENT_TOKEN_TTL: '10800' });
      expect(await lifetimes()).toEqual([10800, 10800]);
    });

    it("is what a rotation uses, whatever the rotating process's own settings", async () => {
      const url = await createTestDatabase();
      await start(url, { CLIENT_TOKEN_TTL: '7200' });
      const cli = await startTestingModule(url, KeysModule, { CLIENT_TOKEN_TTL: '86400', SIGNING_ALG: 'RS256' });
      started.push(cli);
      const before = Date.now();
      const rotated = await cli.get(KeyAdminService).rotate();
      expect(rotated.map((key) => key.alg)).toEqual(['ES256', 'RS256']);
      for (const key of rotated) {
        // The old key signs until the new one activates (KEY_ACTIVATION_DELAY, 60 s by default), then for 2 h more.
        expect(Date.parse(key.retired.expires_at) - Date.parse(key.activates_at)).toBe(7_200_000);
        expect(Date.parse(key.activates_at) - before).toBeGreaterThanOrEqual(60_000);
        expect(Date.parse(key.activates_at) - before).toBeLessThan(62_000);
      }
      expect(await activeKeys(url)).toMatchObject([
        { kid: rotated[0].kid, alg: 'ES256', retired_lifetime_seconds: 7200 },
        { kid: rotated[1].kid, alg: 'RS256', retired_lifetime_seconds: 7200 },
      ]);
    });
  });

  describe('encryption at rest with KEYS_ENCRYPTION_KEY', () => {
    const withKek = (kek = KEK, encoding: BufferEncoding = 'base64') => ({ KEYS_ENCRYPTION_KEY: kek.toString(encoding) });

    it('stores the private key sealed, never as PEM, and still signs and verifies', async () => {
      const url = await createTestDatabase();
      const app = await start(url, withKek());
      const rows = await storedKeys(url);
      for (const row of rows) {
        expect(row.private_key_pem).toBeNull();
        expect(row.private_key_encrypted!.toString('latin1')).not.toContain('PRIVATE KEY');
      }
      expect(rows.map((row) => createPrivateKey(privatePem(row)).asymmetricKeyType)).toEqual(['ec', 'rsa']);
      expect(await signAndVerify(app)).toEqual({ claims: expect.objectContaining({ sub: 'device' }), kid: rows[0].kid, alg: 'ES256' });
      expect(await signAndVerify(app, 'RS256')).toEqual({ claims: expect.objectContaining({ sub: 'device' }), kid: rows[1].kid, alg: 'RS256' });
    });

    it('works again after a restart with the same KEK, in any of its encodings', async () => {
      const url = await createTestDatabase();
      const first = await start(url, withKek(KEK, 'hex'));
      const signed = await first.get(JwtSignerService).sign({ iss: ISSUER }, { typ: 'at+jwt', expiresInSeconds: 60 });
      await stop(first);
      const restarted = await start(url, withKek(KEK, 'base64url'));
      await expect(restarted.get(JwtSignerService).verify(signed, { typ: 'at+jwt', issuer: ISSUER })).resolves.toMatchObject({ iss: ISSUER });
      expect((await signAndVerify(restarted)).kid).toBe((await storedKeys(url))[0].kid);
      expect(await storedKeys(url)).toHaveLength(2);
    });

    it('refuses to start over encrypted keys without a KEK, or with another one, naming KEYS_ENCRYPTION_KEY', async () => {
      const url = await createTestDatabase();
      await start(url, withKek());
      const before = await storedKeys(url);
      const startFailure = (vars: Record<string, string>) => start(url, vars).then(() => null, (error: Error) => error);

      const missing = await startFailure({});
      expect(missing?.message).toMatch(/^the private signing keys are stored encrypted, but KEYS_ENCRYPTION_KEY is not set/);
      const wrong = await startFailure(withKek(OTHER_KEK));
      expect(wrong?.message).toMatch(/^KEYS_ENCRYPTION_KEY does not decrypt the stored private signing keys/);
      for (const error of [missing, wrong]) {
        expect(error!.message).not.toMatch(/authenticate|\n/);
        expect(error!.name).toBe('StartupRefusal'); // the start stops in one line, no stack
      }
      // Nothing replaced, nothing re-sealed.
      expect(await storedKeys(url)).toEqual(before);
    });

    it('seals every plain-text key when a KEK is added, keeping the active key', async () => {
      const url = await createTestDatabase();
      const plain = await start(url, SIGN_AT_ONCE);
      const { kid: signing } = await rotateEs256(plain);
      const signed = await plain.get(JwtSignerService).sign({ iss: ISSUER }, { typ: 'at+jwt', expiresInSeconds: 60 });
      const before = await storedKeys(url);
      expect(before.map((row) => row.private_key_pem)).toEqual(Array(3).fill(expect.stringContaining('BEGIN PRIVATE KEY')));
      await stop(plain);

      const sealed = await start(url, withKek());
      const after = await storedKeys(url);
      expect(after.map((row) => row.kid)).toEqual(before.map((row) => row.kid));
      for (const [index, row] of after.entries()) {
        expect(row.private_key_pem).toBeNull();
        expect(privatePem(row)).toBe(before[index].private_key_pem);
      }
      await expect(sealed.get(JwtSignerService).verify(signed, { typ: 'at+jwt', issuer: ISSUER })).resolves.toMatchObject({ iss: ISSUER });
      expect((await signAndVerify(sealed)).kid).toBe(signing);
    });

    it('refuses a rotation without the KEK, or with another one, changing nothing; with it the new key is sealed', async () => {
      const url = await createTestDatabase();
      await start(url, withKek());
      const before = await storedKeys(url);
      for (const vars of [{}, withKek(OTHER_KEK)]) {
        const cli = await startTestingModule(url, KeysModule, vars);
        started.push(cli);
        await expect(cli.get(KeyAdminService).rotate()).rejects.toThrow(/KEYS_ENCRYPTION_KEY/);
        expect(await storedKeys(url)).toEqual(before);
      }
      const cli = await startTestingModule(url, KeysModule, withKek());
      started.push(cli);
      for (const { kid } of await cli.get(KeyAdminService).rotate()) {
        const created = (await storedKeys(url)).find((row) => row.kid === kid)!;
        expect(created.private_key_pem).toBeNull();
        expect(privatePem(created)).toContain('BEGIN PRIVATE KEY');
      }
    });
  });

  describe('revocation', () => {
    it('withdraws a retired key at once: out of the JWKS, its tokens refused, cached ones included', async () => {
      const url = await createTestDatabase();
      const app = await start(url, SIGN_AT_ONCE);
      const signer = app.get(JwtSignerService);
      const old = await signAndVerify(app);
      const token = await signer.sign({ iss: ISSUER }, { typ: 'at+jwt', expiresInSeconds: 60 });
      await signer.verify(token, { typ: 'at+jwt', issuer: ISSUER }); // remembered now
      const { kid: current } = await rotateEs256(app);

      const revoked = await app.get(KeyAdminService).revoke(old.kid);
      expect(revoked).toMatchObject({ kid: old.kid, status: 'revoked', already_revoked: false, replaced_by: null });
      expect(app.get(KeysService).isRevoked(old.kid)).toBe(true);
      expect(await publishedKids(app)).toEqual([current, (await activeKey(url, 'RS256')).kid].sort());
      await expect(signer.verify(token, { typ: 'at+jwt', issuer: ISSUER })).rejects.toThrow(InvalidJwt);
      expect((await signAndVerify(app)).kid).toBe(current);
    });

    it('replaces a revoked active key with a new one of its algorithm, in the same transaction', async () => {
      const url = await createTestDatabase();
      const app = await start(url, { SIGNING_ALG: 'RS256', KEYS_ENCRYPTION_KEY: KEK.toString('hex') });
      const [es256, active] = await storedKeys(url);
      const heard: string[] = [];
      app.get(KeysService).onRevoked((kid) => heard.push(kid));

      const revoked = await app.get(KeyAdminService).revoke(active.kid);
      expect(revoked.replaced_by).toMatchObject({ kid: expect.any(String), alg: 'RS256' });
      expect(heard).toEqual([active.kid]);
      const stored = await storedKeys(url);
      expect(stored.find((row) => row.kid === active.kid)).toMatchObject({ revoked_at: expect.any(Date), retired_at: expect.any(Date) });
      const [untouched, replacement] = stored.filter((row) => row.retired_at === null);
      expect(untouched).toEqual(es256);
      expect(replacement).toMatchObject({ kid: revoked.replaced_by!.kid, alg: 'RS256', private_key_pem: null });
      expect((await signAndVerify(app)).kid).toBe(replacement.kid);
      expect((await signAndVerify(app, 'ES256')).kid).toBe(es256.kid);
    });

    it('answers an unknown kid with not_found, and a second revocation as a no-op success', async () => {
      const url = await createTestDatabase();
      const app = await start(url);
      const admin = app.get(KeyAdminService);
      await expect(admin.revoke('no-such-kid')).rejects.toMatchObject({ code: 'not_found', message: 'no signing key with kid "no-such-kid"' });
      const [active] = await storedKeys(url);
      const first = await admin.revoke(active.kid);
      const again = await admin.revoke(active.kid);
      expect(again).toEqual({ ...first, already_revoked: true, replaced_by: null });
      expect(await activeKeys(url)).toHaveLength(2);
    });

    it('lists every key with its status and public facts only', async () => {
      const url = await createTestDatabase();
      const app = await start(url, { KEYS_ENCRYPTION_KEY: KEK.toString('hex'), ...SIGN_AT_ONCE });
      const admin = app.get(KeyAdminService);
      const [first, rs256] = await storedKeys(url);
      const { kid: second } = await rotateEs256(app);
      const { kid: third } = await rotateEs256(app);
      await admin.revoke(second);
      await query(url, `UPDATE signing_keys SET expires_at = now() - interval '1 second' WHERE kid = $1`, [first.kid]);

      const listed = await admin.list();
      expect(listed.map(({ kid, alg, status }) => ({ kid, alg, status }))).toEqual([
        { kid: third, alg: 'ES256', status: 'active' },
        { kid: second, alg: 'ES256', status: 'revoked' },
        { kid: first.kid, alg: 'ES256', status: 'expired' },
        { kid: rs256.kid, alg: 'RS256', status: 'active' },
      ]);
      for (const view of listed) {
        expect(Object.keys(view).sort()).toEqual(['activates_at', 'alg', 'created_at', 'expires_at', 'kid', 'retired_at', 'revoked_at', 'status']);
      }
    });
  });

  it('reads public columns only for the JWKS and the key list (a role that may not read private ones can serve them)', async () => {
    const url = await createTestDatabase();
    await start(url);
    const role = `jwks_reader_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(12).toString('hex');
    await query(url, `CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
    await query(url, `GRANT SELECT (kid, alg, public_jwk, retired_lifetime_seconds, created_at, activates_at, retired_at, expires_at, revoked_at) ON signing_keys TO ${role}`);
    const restricted = new URL(url);
    restricted.username = role;
    restricted.password = password;
    const dataSource = await new DataSource({ ...(await dataSourceOptions(restricted.toString(), 1)), entities: [SigningKeyEntity] }).initialize();
    try {
      const repository = new KeysRepository(dataSource);
      expect(await repository.findPublishedJwks()).toHaveLength(2);
      expect((await repository.findAllFacts()).keys).toHaveLength(2);
      await expect(repository.findLive()).rejects.toThrow(/permission denied/);
    } finally {
      await dataSource.destroy();
      await query(url, `REVOKE ALL ON signing_keys FROM ${role}`);
      await query(url, `DROP ROLE ${role}`);
    }
  });

  it('undoes its migration only without encrypted keys, forgetting revoked keys rather than publishing them again', async () => {
    const url = await createTestDatabase();
    const sealed = await start(url, { KEYS_ENCRYPTION_KEY: KEK.toString('hex') });
    await stop(sealed);
    const dataSource = await new DataSource(await dataSourceOptions(url, 1)).initialize();
    const undoThroughKeyEncryption = async () => {
      while ((await query<{ name: string }>(url, 'SELECT name FROM migrations ORDER BY id DESC LIMIT 1'))[0].name !== 'SigningKeyEncryption1795270000000') {
        await dataSource.undoLastMigration({ transaction: 'each' });
      }
      await dataSource.undoLastMigration({ transaction: 'each' });
    };
    try {
      await expect(undoThroughKeyEncryption()).rejects.toThrow(/encrypted with KEYS_ENCRYPTION_KEY/);
      expect((await storedKeys(url))[0].private_key_encrypted).toEqual(expect.any(Buffer));

      await query(url, 'DELETE FROM signing_keys');
      const plain = await start(url);
      const [revoked] = await storedKeys(url);
      await plain.get(KeyAdminService).revoke(revoked.kid);
      await stop(plain);
      await undoThroughKeyEncryption();
      const left = await query<Record<string, unknown>>(url, 'SELECT * FROM signing_keys');
      expect(left.map((row) => row.kid)).not.toContain(revoked.kid);
      expect(Object.keys(left[0]).sort()).toEqual(['alg', 'created_at', 'expires_at', 'kid', 'private_key_pem', 'public_jwk', 'retired_at']);
    } finally {
      await dataSource.destroy();
    }
  });

  it('reloads the keys once for many concurrent tokens with an unknown kid', async () => {
    const url = await createTestDatabase();
    const app = await start(url);
    await signAndVerify(app); // the ring is loaded
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 6_000); // past the unknown-kid reload limit, within the ring's lifetime
    const reads = vi.spyOn(app.get(KeysRepository), 'findLive');

    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const forged = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        new SignJWT({ iss: ISSUER }).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: `unknown-${index}` }).setExpirationTime('1m').sign(privateKey),
      ),
    );
    const outcomes = await Promise.allSettled(forged.map((token) => app.get(JwtSignerService).verify(token, { typ: 'at+jwt', issuer: ISSUER })));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(Array(10).fill('rejected'));
    expect(reads).toHaveBeenCalledTimes(1);
  });
});
