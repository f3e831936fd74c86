import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRemoteJWKSet, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidJwt, JwtSignerService } from '../../../src/keys/jwt-signer.service.js';
import type { SigningAlg } from '../../../src/keys/signing-key.entity.js';
import { clientToken } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { runCli } from '../../setup/processes.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const HISTORY = '/voyage/notification/v1/notifications?since=2020-01-01T00:00:00.000Z';
const KEK = Buffer.alloc(32, 9).toString('hex');

/**
 * The service keeps an active key of each of ES256 and RS256, both in the JWKS: access tokens
 * sign with SIGNING_ALG's (ES256 by default), and a caller may name the other, as an ID token
 * for a client registered with RS256 does (OpenID Connect Core §3.1.3.7: RS256 by default).
 */
describe('a signing key for each of ES256 and RS256', () => {
  let app: TestApp;
  let device: TestClient;
  let cwd: string;
  const jwksUrl = () => new URL(`${app.baseUrl}/.well-known/jwks.json`);
  const jwks = async () => (await (await fetch(jwksUrl())).json()) as JSONWebKeySet;
  /** An ID-token-shaped JWT (typ JWT) signed by the service with `alg`. */
  const signed = (alg: SigningAlg) =>
    app.get(JwtSignerService).sign({ iss: app.baseUrl, sub: 'user-1', aud: device.id }, { typ: 'JWT', expiresInSeconds: 300, alg });
  /** Verified as a relying party does: a fresh remote key set (no cache), the issuer, the audience, the one algorithm. */
  const relyingPartyVerify = (token: string, alg: SigningAlg) =>
    jwtVerify(token, createRemoteJWKSet(jwksUrl()), { issuer: app.baseUrl, audience: device.id, algorithms: [alg], typ: 'JWT' });
  const historyStatus = async (token: string) => (await fetch(`${app.baseUrl}${HISTORY}`, { headers: { authorization: `Bearer ${token}` } })).status;

  beforeAll(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-signing-algorithms-'));
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: KEK });
    device = await createClient(app, { grants: ['client_credentials'] });
  });
  afterAll(async () => {
    await app?.close();
    if (cwd) await rm(cwd, { recursive: true, force: true });
  });

  it('publishes an ES256 and an RS256 key in the JWKS', async () => {
    const { keys } = await jwks();
    expect(keys).toEqual([
      { kty: 'EC', crv: 'P-256', x: expect.any(String), y: expect.any(String), kid: expect.any(String), alg: 'ES256', use: 'sig' },
      { kty: 'RSA', n: expect.any(String), e: 'AQAB', kid: expect.any(String), alg: 'RS256', use: 'sig' },
    ]);
    // 2048-bit RSA (RFC 7518 §3.3): the modulus is 256 bytes.
    expect(Buffer.from(keys[1].n!, 'base64url')).toHaveLength(256);
  });

  it('signs with the algorithm asked for, a JWT a relying party verifies with the JWKS, while access tokens stay ES256', async () => {
    const { keys } = await jwks();
    for (const [index, alg] of (['ES256', 'RS256'] as const).entries()) {
      const token = await signed(alg);
      const { payload, protectedHeader } = await relyingPartyVerify(token, alg);
      expect(protectedHeader).toEqual({ alg, typ: 'JWT', kid: keys[index].kid });
      expect(payload).toMatchObject({ iss: app.baseUrl, sub: 'user-1', aud: device.id, exp: payload.iat! + 300 });
      // The service verifies it too (ID token hints come back), its `JWT` type in any case.
      await expect(app.get(JwtSignerService).verify(token, { typ: 'JWT', issuer: app.baseUrl })).resolves.toMatchObject({ sub: 'user-1' });
    }
    const accessToken = await clientToken(app, device);
    expect(decodeProtectedHeader(accessToken)).toEqual({ alg: 'ES256', typ: 'at+jwt', kid: keys[0].kid });
  });

  it('keys:revoke of the RS256 key refuses its tokens at once and has a new RS256 key sign, leaving the ES256 key alone', async () => {
    const [es256, rs256] = (await jwks()).keys;
    const token = await signed('RS256');
    await app.get(JwtSignerService).verify(token, { typ: 'jwt', issuer: app.baseUrl }); // remembered now
    const accessToken = await clientToken(app, device);
    expect(await historyStatus(accessToken)).toBe(200);

    const run = await runCli(['keys:revoke', rs256.kid!], { cwd, env: { DATABASE_URL: app.databaseUrl, LOG_LEVEL: 'warn', KEYS_ENCRYPTION_KEY: KEK } });
    expect(run, run.stderr).toMatchObject({ code: 0 });
    const revoked = JSON.parse(run.stdout) as { kid: string; status: string; replaced_by: { kid: string; alg: string } | null };
    expect(revoked).toMatchObject({ kid: rs256.kid, status: 'revoked', replaced_by: { alg: 'RS256' } });

    // The notice reaches the service through PostgreSQL: from then on the token is refused, remembered or not.
    const outcome = () => app.get(JwtSignerService).verify(token, { typ: 'jwt', issuer: app.baseUrl }).then(() => 'accepted', (error: unknown) => error instanceof InvalidJwt && 'refused');
    await expect.poll(outcome, { timeout: 3_000, interval: 50 }).toBe('refused');
    expect((await jwks()).keys.map((key) => key.kid)).toEqual([revoked.replaced_by!.kid, es256.kid]);
    await expect(relyingPartyVerify(token, 'RS256')).rejects.toMatchObject({ code: 'ERR_JWKS_NO_MATCHING_KEY' });

    const fresh = await signed('RS256');
    expect(decodeProtectedHeader(fresh).kid).toBe(revoked.replaced_by!.kid);
    await expect(relyingPartyVerify(fresh, 'RS256')).resolves.toBeTruthy();
    // ES256 signs as before, and its tokens stay valid.
    expect(await historyStatus(accessToken)).toBe(200);
    expect(decodeProtectedHeader(await clientToken(app, device)).kid).toBe(es256.kid);
  });
});
