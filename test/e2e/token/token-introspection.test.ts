import { randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HousekeepingService } from '../../../src/database/housekeeping.service.js';
import { freePort } from '../../setup/free-port.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import {
  authorizationCode,
  basicAuth,
  credentials,
  exchangeCode,
  type FormResponse,
  introspect,
  issueTokens,
  LOOPBACK_PATTERN,
  LOOPBACK_REDIRECT,
  type PortalUser,
  postForm,
  refresh,
  revoke,
  storedHash,
  type TokenResponse,
  userId,
} from '../../factories/token-flow.factory.js';
import { query } from '../../setup/database.js';
import { reconnectListeners, startSecondInstance } from '../../setup/instances.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const INACTIVE = { active: false };

function expectOAuthError(response: FormResponse, status: number, error: string) {
  expect({ status: response.status, body: response.body }).toEqual({ status, body: { error, error_description: expect.any(String) } });
  expect(response.headers.get('cache-control')).toBe('no-store');
}

/** 200, not cacheable, exactly this body. */
function expectIntrospection(response: FormResponse, body: object) {
  expect({ status: response.status, body: response.body }).toStrictEqual({ status: 200, body });
  expect(response.headers.get('cache-control')).toBe('no-store');
  expect(response.headers.get('pragma')).toBe('no-cache');
}

/** RFC 7009 §2.2: 200 with an empty body. */
function expectRevoked(response: FormResponse) {
  expect({ status: response.status, text: response.text }).toEqual({ status: 200, text: '' });
  expect(response.headers.get('cache-control')).toBe('no-store');
}

const b64url = (value: object | string) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

describe('token introspection and revocation', () => {
  let app: TestApp;
  let user: PortalUser;
  let client: TestClient;
  let other: TestClient;

  const newClient = () => createClient(app, { redirectPatterns: [LOOPBACK_PATTERN], scopes: ['a', 'b'] });
  const tokens = (owner: TestClient = client, scope?: string) => issueTokens(app, owner, user, { redirectUrl: LOOPBACK_REDIRECT, scope });
  const isActive = async (owner: TestClient, token: string) => ((await introspect(app, owner, token)).body as { active: boolean }).active;

  beforeAll(async () => {
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0', HOUSEKEEPING_INTERVAL: '86400' });
    user = await createUser(app);
    client = await newClient();
    other = await newClient();
  });
  afterAll(() => app?.close());

  describe('POST /sso/introspect', () => {
    it('describes an active access token: active, client_id, sub, exp, iat, iss, aud, jti, token_type Bearer', async () => {
      const { access_token } = await tokens();
      const claims = decodeJwt(access_token);
      expectIntrospection(await introspect(app, client, access_token), {
        active: true,
        client_id: client.id,
        sub: await userId(app, user),
        exp: claims.exp,
        iat: claims.iat,
        iss: app.baseUrl,
        aud: app.baseUrl,
        jti: claims.jti,
        token_type: 'Bearer',
      });
      expect(claims.exp! - claims.iat!).toBe(3600);
    });

    it('names the scope of an access token that has one', async () => {
      const { access_token } = await tokens(client, 'a b');
      const response = await introspect(app, client, access_token);
      expect(response.body).toMatchObject({ active: true, scope: 'a b', client_id: client.id, token_type: 'Bearer' });
    });

    it('describes an active refresh token with its expiry and no token_type (that names access token types)', async () => {
      const { refresh_token } = await tokens(client, 'a');
      const response = await introspect(app, client, refresh_token);
      expectIntrospection(response, {
        active: true,
        scope: 'a',
        client_id: client.id,
        sub: await userId(app, user),
        exp: expect.any(Number),
      });
      // REFRESH_TOKEN_TTL defaults to 14 days
      expect(Math.abs((response.body.exp as number) - (Date.now() / 1000 + 14 * 86400))).toBeLessThan(60);
    });

    it('accepts client_secret_basic', async () => {
      const { access_token } = await tokens();
      const response = await postForm(app, '/sso/introspect', { token: access_token }, { authorization: basicAuth(client.id, client.secret) });
      expect(response.body).toMatchObject({ active: true, client_id: client.id });
    });

    it('answers {active: false} for strings that are not tokens it issued', async () => {
      const config = await fetch(`${app.baseUrl}/external/oauth2helper/config/${client.id}`, { method: 'POST' });
      const state = new URL(((await config.json()) as { authorize_url: string }).authorize_url).searchParams.get('state')!;
      const { access_token } = await tokens();
      const [header, payload] = access_token.split('.');
      const garbage = [
        'garbage',
        'a.b.c',
        state, // a signed JWT of this service, but not an access token
        `${b64url({ alg: 'none', typ: 'at+jwt', kid: decodeJwtHeaderKid(access_token) })}.${payload}.`, // unsigned
        `${header}.${b64url({ ...(decodeJwt(access_token) as Record<string, unknown>), client_id: other.id })}.${access_token.split('.')[2]}`, // tampered
        `${b64url({ alg: 'ES256', typ: 'JWT', kid: 'k' })}.${b64url('not json')}.c2ln`, // undecodable payload
      ];
      for (const token of garbage) expectIntrospection(await introspect(app, client, token), INACTIVE);
    });

    it('answers {active: false} for another client\'s access and refresh tokens', async () => {
      const theirs = await tokens(other);
      expectIntrospection(await introspect(app, client, theirs.access_token), INACTIVE);
      expectIntrospection(await introspect(app, client, theirs.refresh_token), INACTIVE);
      expect(await isActive(other, theirs.access_token)).toBe(true);
    });

    it('answers {active: false} for a rotated refresh token, while its successor is active', async () => {
      const first = await tokens();
      const second = (await refresh(app, client, first.refresh_token)).body as unknown as TokenResponse;
      expectIntrospection(await introspect(app, client, first.refresh_token), INACTIVE);
      expect(await isActive(client, second.refresh_token)).toBe(true);
      // the earlier access token is not revoked by a normal rotation
      expect(await isActive(client, first.access_token)).toBe(true);
    });

    it('answers {active: false} for an expired refresh token', async () => {
      const { refresh_token } = await tokens();
      await query(app.databaseUrl, "UPDATE refresh_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = $1", [storedHash(refresh_token)]);
      expectIntrospection(await introspect(app, client, refresh_token), INACTIVE);
    });

    it('answers {active: false} for revoked tokens', async () => {
      const revokedAccess = await tokens();
      expectRevoked(await revoke(app, client, revokedAccess.access_token));
      expectIntrospection(await introspect(app, client, revokedAccess.access_token), INACTIVE);

      const revokedGrant = await tokens();
      expectRevoked(await revoke(app, client, revokedGrant.refresh_token));
      expectIntrospection(await introspect(app, client, revokedGrant.refresh_token), INACTIVE);
      expectIntrospection(await introspect(app, client, revokedGrant.access_token), INACTIVE);
    });

    it('refuses an unauthenticated or wrongly authenticated caller with 401 invalid_client', async () => {
      const { access_token } = await tokens();
      expectOAuthError(await postForm(app, '/sso/introspect', { token: access_token }), 401, 'invalid_client');
      expectOAuthError(await postForm(app, '/sso/introspect', { token: access_token, client_id: client.id }), 401, 'invalid_client');
      const wrong = await postForm(app, '/sso/introspect', { token: access_token }, { authorization: basicAuth(client.id, 'wrong-secret') });
      expectOAuthError(wrong, 401, 'invalid_client');
      expect(wrong.headers.get('www-authenticate')).toMatch(/^Basic /);
    });

    it('refuses a request without token with 400 invalid_request', async () => {
      expectOAuthError(await postForm(app, '/sso/introspect', credentials(client)), 400, 'invalid_request');
    });

    it('refuses a JSON body with 415 invalid_request', async () => {
      const { access_token } = await tokens();
      const response = await postForm(app, '/sso/introspect', JSON.stringify({ token: access_token, ...credentials(client) }), {
        'content-type': 'application/json',
      });
      expectOAuthError(response, 415, 'invalid_request');
    });
  });

  describe('POST /sso/revoke', () => {
    it('revokes an access token: 200 with an empty body, then it introspects inactive', async () => {
      const { access_token, refresh_token } = await tokens();
      expect(await isActive(client, access_token)).toBe(true);
      expectRevoked(await revoke(app, client, access_token));
      expect(await isActive(client, access_token)).toBe(false);
      // revoking it again is still a success
      expectRevoked(await revoke(app, client, access_token));
      // the grant lives on: its refresh token still refreshes
      expect((await refresh(app, client, refresh_token)).status).toBe(200);
    });

    it('revokes a refresh token and with it the whole grant: its access tokens go inactive and it no longer refreshes', async () => {
      const first = await tokens();
      const second = (await refresh(app, client, first.refresh_token)).body as unknown as TokenResponse;
      expectRevoked(await revoke(app, client, second.refresh_token));

      expect(await isActive(client, second.access_token)).toBe(false);
      expect(await isActive(client, first.access_token)).toBe(false);
      expect(await isActive(client, second.refresh_token)).toBe(false);
      expectOAuthError(await refresh(app, client, second.refresh_token), 400, 'invalid_grant');
    });

    it('answers 200 for an unknown token', async () => {
      expectRevoked(await revoke(app, client, 'never-issued'));
      expectRevoked(await revoke(app, client, `${b64url({ alg: 'ES256', typ: 'at+jwt', kid: 'k' })}.${b64url({})}.c2ln`));
    });

    it('refuses another client\'s token with 400 invalid_request and leaves it active', async () => {
      const theirs = await tokens(other);
      expectOAuthError(await revoke(app, client, theirs.access_token), 400, 'invalid_request');
      expectOAuthError(await revoke(app, client, theirs.refresh_token), 400, 'invalid_request');
      expect(await isActive(other, theirs.access_token)).toBe(true);
      expect(await isActive(other, theirs.refresh_token)).toBe(true);
    });

    it('accepts client_secret_basic', async () => {
      const { access_token } = await tokens();
      expectRevoked(await postForm(app, '/sso/revoke', { token: access_token }, { authorization: basicAuth(client.id, client.secret) }));
      expect(await isActive(client, access_token)).toBe(false);
    });

    it('refuses an unauthenticated caller with 401 invalid_client and revokes nothing', async () => {
      const { access_token } = await tokens();
      expectOAuthError(await postForm(app, '/sso/revoke', { token: access_token }), 401, 'invalid_client');
      expectOAuthError(await postForm(app, '/sso/revoke', { token: access_token, client_id: client.id, client_secret: 'wrong' }), 401, 'invalid_client');
      expect(await isActive(client, access_token)).toBe(true);
    });

    it('refuses a request without token with 400 invalid_request', async () => {
      expectOAuthError(await postForm(app, '/sso/revoke', credentials(client)), 400, 'invalid_request');
    });
  });

  describe('GET /.well-known/oauth-authorization-server', () => {
    it('lists issuer, endpoints (the device authorization endpoint of RFC 8628 too), JWKS, grant types, both client authentication methods (and none for public clients but at introspection) and S256 (RFC 8414)', async () => {
      const response = await fetch(`${app.baseUrl}/.well-known/oauth-authorization-server`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
      const authMethods = ['client_secret_basic', 'client_secret_post'];
      const anyClient = [...authMethods, 'none'];
      expect(await response.json()).toEqual({
        issuer: app.baseUrl,
        authorization_endpoint: `${app.baseUrl}/sso/authorize`,
        token_endpoint: `${app.baseUrl}/sso/token`,
        device_authorization_endpoint: `${app.baseUrl}/sso/device_authorization`,
        introspection_endpoint: `${app.baseUrl}/sso/introspect`,
        revocation_endpoint: `${app.baseUrl}/sso/revoke`,
        registration_endpoint: `${app.baseUrl}/sso/register`,
        jwks_uri: `${app.baseUrl}/.well-known/jwks.json`,
        response_types_supported: ['code'],
        response_modes_supported: ['query'],
        grant_types_supported: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
        token_endpoint_auth_methods_supported: anyClient,
        introspection_endpoint_auth_methods_supported: authMethods,
        revocation_endpoint_auth_methods_supported: anyClient,
        code_challenge_methods_supported: ['S256'],
        service_documentation: `${app.baseUrl}/docs`,
      });
    });

    it('names the same token endpoint as the helper config and an issuer that matches the tokens\' iss', async () => {
      const metadata = (await (await fetch(`${app.baseUrl}/.well-known/oauth-authorization-server`)).json()) as Record<string, string>;
      const config = (await (await fetch(`${app.baseUrl}/external/oauth2helper/config/${client.id}`, { method: 'POST' })).json()) as Record<string, string>;
      expect(config.accesstoken_request_url).toBe(metadata.token_endpoint);
      expect(new URL(config.authorize_url).origin + new URL(config.authorize_url).pathname).toBe(metadata.authorization_endpoint);
      expect(decodeJwt((await tokens()).access_token).iss).toBe(metadata.issuer);
      expect((await fetch(metadata.jwks_uri)).status).toBe(200);
    });
  });
});

describe('HousekeepingService.purge()', () => {
  let app: TestApp;
  let user: PortalUser;
  let client: TestClient;

  const count = async (table: string, column: string, value: Buffer) =>
    (await query<{ n: number }>(app.databaseUrl, `SELECT count(*)::int AS n FROM ${table} WHERE ${column} = $1`, [value]))[0].n;
  const stateOf = async (code: string) =>
    (await query<{ state_id: string }>(app.databaseUrl, 'SELECT state_id FROM authorization_codes WHERE code_hash = $1', [storedHash(code)]))[0].state_id;
  const authorizations = async (stateId: string) =>
    (await query<{ n: number }>(app.databaseUrl, 'SELECT count(*)::int AS n FROM authorizations WHERE state_id = $1', [stateId]))[0].n;

  beforeAll(async () => {
    // No timer-driven purge during the test: only the explicit calls below run.
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0', HOUSEKEEPING_INTERVAL: '86400', REFRESH_TOKEN_TTL: '60' });
    user = await createUser(app);
    client = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
  });
  afterAll(() => app?.close());

  it('deletes expired codes, refresh tokens and authorizations and leaves live ones usable', async () => {
    const expiredCode = await authorizationCode(app, client, user, { redirectUrl: LOOPBACK_REDIRECT });
    const liveCode = await authorizationCode(app, client, user, { redirectUrl: LOOPBACK_REDIRECT });
    const [expiredState, liveState] = [await stateOf(expiredCode), await stateOf(liveCode)];
    const expiredTokens = await issueTokens(app, client, user, { redirectUrl: LOOPBACK_REDIRECT });
    const liveTokens = await issueTokens(app, client, user, { redirectUrl: LOOPBACK_REDIRECT });

    await query(app.databaseUrl, "UPDATE authorization_codes SET expires_at = now() - interval '1 second' WHERE code_hash = $1", [storedHash(expiredCode)]);
    await query(app.databaseUrl, "UPDATE authorizations SET expires_at = now() - interval '1 second' WHERE state_id = $1", [expiredState]);
    // expired long enough ago that any access token issued with it has expired too
    await query(
      app.databaseUrl,
      "UPDATE refresh_tokens SET expires_at = now() - interval '1 second', issued_at = now() - interval '2 hours' WHERE token_hash = $1",
      [storedHash(expiredTokens.refresh_token)],
    );

    expect(await app.get(HousekeepingService).purge()).toBe(3);

    expect(await count('authorization_codes', 'code_hash', storedHash(expiredCode))).toBe(0);
    expect(await count('refresh_tokens', 'token_hash', storedHash(expiredTokens.refresh_token))).toBe(0);
    expect(await authorizations(expiredState)).toBe(0);

    expect(await count('authorization_codes', 'code_hash', storedHash(liveCode))).toBe(1);
    expect(await count('refresh_tokens', 'token_hash', storedHash(liveTokens.refresh_token))).toBe(1);
    expect(await authorizations(liveState)).toBe(1);
    expect((await exchangeCode(app, client, liveCode)).status).toBe(200);
    expect((await refresh(app, client, liveTokens.refresh_token)).status).toBe(200);

    // a second round finds nothing left to do
    expect(await app.get(HousekeepingService).purge()).toBe(0);
  });

  it('deletes expired device authorizations (RFC 8628) with the rest, and only those, counting the undecided one as expired', async () => {
    const insert = (hash: Buffer, userCode: string, lifetime: string) =>
      query(
        app.databaseUrl,
        `INSERT INTO device_codes (device_code_hash, user_code, client_id, interval_seconds, expires_at) VALUES ($1, $2, $3, 5, now() + $4::interval)`,
        [hash, userCode, client.id, lifetime],
      );
    const [expired, live] = [randomBytes(32), randomBytes(32)];
    await insert(expired, 'BBBBBBBB', '-1 second');
    await insert(live, 'CCCCCCCC', '10 minutes');
    const expiredCount = async () => Number(/^device_authorizations_total\{event="expired"\} (\d+)/m.exec(await (await fetch(`${app.baseUrl}/metrics`)).text())?.[1] ?? 0);
    const before = await expiredCount();
    expect(await app.get(HousekeepingService).purge()).toBe(1);
    expect(await count('device_codes', 'device_code_hash', expired)).toBe(0);
    expect(await count('device_codes', 'device_code_hash', live)).toBe(1);
    expect(await expiredCount()).toBe(before + 1);
  });

  it('deletes an old grant once it has no refresh tokens left, after which its access tokens introspect inactive', async () => {
    const { access_token, refresh_token } = await issueTokens(app, client, user, { redirectUrl: LOOPBACK_REDIRECT });
    const grantId = decodeJwt(access_token).sid as string;
    await query(app.databaseUrl, "UPDATE grants SET created_at = now() - interval '2 hours' WHERE id = $1", [grantId]);
    await query(
      app.databaseUrl,
      "UPDATE refresh_tokens SET expires_at = now() - interval '1 second', issued_at = now() - interval '2 hours' WHERE token_hash = $1",
      [storedHash(refresh_token)],
    );
    await app.get(HousekeepingService).purge();
    expect((await query(app.databaseUrl, 'SELECT 1 FROM grants WHERE id = $1', [grantId])).length).toBe(0);
    expect((await introspect(app, client, access_token)).body).toEqual(INACTIVE);
  });

  it('keeps a grant whose newest access token is still valid although its short-lived refresh token expired (REFRESH_TOKEN_TTL < 3600)', async () => {
    const first = await issueTokens(app, client, user, { redirectUrl: LOOPBACK_REDIRECT });
    const grantId = decodeJwt(first.access_token).sid as string;
    // The grant started 2 hours ago; its latest refresh, 61 seconds ago, issued an access token valid for another ~59 minutes.
    const latest = (await refresh(app, client, first.refresh_token)).body as unknown as TokenResponse;
    await query(app.databaseUrl, "UPDATE grants SET created_at = now() - interval '2 hours' WHERE id = $1", [grantId]);
    await query(app.databaseUrl, "UPDATE refresh_tokens SET issued_at = now() - interval '2 hours', expires_at = now() - interval '2 hours' WHERE token_hash = $1", [
      storedHash(first.refresh_token),
    ]);
    await query(app.databaseUrl, "UPDATE refresh_tokens SET issued_at = now() - interval '61 seconds', expires_at = now() - interval '1 second' WHERE token_hash = $1", [
      storedHash(latest.refresh_token),
    ]);

    await app.get(HousekeepingService).purge();

    expect((await introspect(app, client, latest.access_token)).body).toMatchObject({ active: true, client_id: client.id });
    expect((await query(app.databaseUrl, 'SELECT 1 FROM grants WHERE id = $1', [grantId])).length).toBe(1);
  });
});

function decodeJwtHeaderKid(token: string): string {
  return (JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()) as { kid: string }).kid;
}

describe('GET /.well-known/oauth-authorization-server with an issuer that has a path', () => {
  it('serves the metadata at the path-inserted location of RFC 8414 §3.1 only', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const app = await startTestApp({ PORT: String(port), IDENTITY_URL: `${base}/identity` });
    try {
      const response = await fetch(`${base}/.well-known/oauth-authorization-server/identity`);
      expect(response.status).toBe(200);
      expect(((await response.json()) as { issuer: string }).issuer).toBe(`${base}/identity`);
      expect((await fetch(`${base}/.well-known/oauth-authorization-server/elsewhere`)).status).toBe(404);
    } finally {
      await app.close();
    }
  });
});

describe('access token revocation across instances', () => {
  let first: TestApp;
  let second: TestApp;
  let user: PortalUser;
  let client: TestClient;

  const isActiveOn = async (app: TestApp, token: string) => ((await introspect(app, client, token)).body as { active: boolean }).active;

  beforeAll(async () => {
    first = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0' });
    second = await startSecondInstance(first, { CODE_POLL_MIN_INTERVAL: '0' });
    user = await createUser(first);
    client = await createClient(first, { redirectPatterns: [LOOPBACK_PATTERN] });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it('refuses on the other instance, within moments, an access token revoked through one', async () => {
    const { access_token } = await issueTokens(first, client, user, { redirectUrl: LOOPBACK_REDIRECT });
    expect(await isActiveOn(second, access_token)).toBe(true);
    expectRevoked(await revoke(first, client, access_token));
    expect(await isActiveOn(first, access_token)).toBe(false);
    await expect.poll(() => isActiveOn(second, access_token), { timeout: 3000, interval: 50 }).toBe(false);
  });

  it('refuses a token whose revocation notice was lost, once the instance listens again', async () => {
    const { access_token } = await issueTokens(first, client, user, { redirectUrl: LOOPBACK_REDIRECT });
    expect(await isActiveOn(second, access_token)).toBe(true);
    // Revoked without the NOTIFY, as if it had been sent while the listeners were disconnected.
    const claims = decodeJwt(access_token);
    await query(first.databaseUrl, 'INSERT INTO revoked_access_tokens (jti, expires_at) VALUES ($1, to_timestamp($2))', [claims.jti, claims.exp]);
    await reconnectListeners(second);
    expect(await isActiveOn(second, access_token)).toBe(false);
  });
});
