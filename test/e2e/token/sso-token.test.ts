import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import type { GrantType } from '../../../src/clients/client.entity.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import {
  authorizationCode,
  basicAuth,
  type CodeOptions,
  credentials,
  exchangeCode,
  type FormResponse,
  introspect,
  LOOPBACK_PATTERN,
  LOOPBACK_REDIRECT,
  pkcePair,
  type PortalUser,
  postForm,
  refresh,
  storedHash,
  type TokenResponse,
  userId,
} from '../../factories/token-flow.factory.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** RFC 6749 §5.2 error body, never cached. */
function expectOAuthError(response: FormResponse, status: number, error: string) {
  expect({ status: response.status, body: response.body }).toEqual({ status, body: { error, error_description: expect.any(String) } });
  expect(response.headers.get('cache-control')).toBe('no-store');
  expect(response.headers.get('pragma')).toBe('no-cache');
}

/** The helper flow's token response, exactly these five fields, never cached. */
function expectTokenResponse(response: FormResponse, scope: string | null) {
  expect({ status: response.status, body: response.body }).toStrictEqual({
    status: 200,
    body: { access_token: expect.any(String), expires_in: 3600, token_type: 'bearer', scope, refresh_token: expect.any(String) },
  });
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(response.headers.get('cache-control')).toBe('no-store');
  expect(response.headers.get('pragma')).toBe('no-cache');
  return response.body as unknown as TokenResponse;
}

/** Every "percent-encode all characters" spelling, so the server must really form-decode Basic credentials. */
const percentEncodeAll = (value: string) =>
  [...Buffer.from(value, 'utf8')].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('');

/**
 * The token endpoint's users: helpers that also remember every secret handed out, so the last
 * test can check none of them reached the logs.
 */
function tokenFlow(getApp: () => TestApp) {
  const secrets: string[] = [];
  const remember = <T extends string>(value: T) => (secrets.push(value), value);
  const flow = {
    secrets,
    remember,
    async client(options: { grants?: GrantType[]; scopes?: string[] } = {}): Promise<TestClient> {
      const client = await createClient(getApp(), { redirectPatterns: [LOOPBACK_PATTERN], scopes: ['a', 'b', 'c'], ...options });
      remember(client.secret);
      return client;
    },
    async user(): Promise<PortalUser> {
      const user = await createUser(getApp());
      remember(user.password);
      return user;
    },
    async code(client: TestClient, user: PortalUser, options: CodeOptions = { redirectUrl: LOOPBACK_REDIRECT }): Promise<string> {
      return remember(await authorizationCode(getApp(), client, user, options));
    },
    async exchange(client: TestClient, code: string, extra: Record<string, string> = {}) {
      const response = await exchangeCode(getApp(), client, code, extra);
      rememberTokens(response);
      return response;
    },
    async refresh(client: TestClient, refreshToken: string, extra: Record<string, string> = {}) {
      const response = await refresh(getApp(), client, refreshToken, extra);
      rememberTokens(response);
      return response;
    },
    /** Signed in, code exchanged: the device's first token response. */
    async tokens(client: TestClient, user: PortalUser, extra: Record<string, string> = {}): Promise<TokenResponse> {
      return expectTokenResponse(await flow.exchange(client, await flow.code(client, user), extra), extra.scope ?? null);
    },
    async isActive(client: TestClient, token: string): Promise<boolean> {
      const response = await introspect(getApp(), client, token);
      expect(response.status).toBe(200);
      return (response.body as { active: boolean }).active;
    },
  };
  function rememberTokens(response: FormResponse) {
    if (response.status !== 200) return;
    const body = response.body as unknown as TokenResponse;
    remember(body.access_token);
    remember(body.refresh_token);
  }
  return flow;
}

describe('POST /sso/token', () => {
  let app: TestApp;
  const flow = tokenFlow(() => app);
  let user: PortalUser;
  let client: TestClient;

  beforeAll(async () => {
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0', HOUSEKEEPING_INTERVAL: '86400' });
    user = await flow.user();
    client = await flow.client();
  });
  afterAll(() => app?.close());

  describe('grant_type=authorization_code', () => {
    it('answers exactly {access_token, expires_in: 3600, token_type: "bearer", scope: null, refresh_token}, not cacheable', async () => {
      const code = await flow.code(client, user);
      const tokens = expectTokenResponse(await flow.exchange(client, code), null);
      expect(tokens.refresh_token).not.toBe(tokens.access_token);
      expect(tokens.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    });

    it('also works for a code collected by polling code_url', async () => {
      const code = await flow.code(client, user, {});
      expectTokenResponse(await flow.exchange(client, code), null);
    });

    it('grants a requested scope the client is allowed and names it in the response', async () => {
      const tokens = expectTokenResponse(await flow.exchange(client, await flow.code(client, user), { scope: 'a' }), 'a');
      expect(decodeJwt(tokens.access_token).scope).toBe('a');
    });

    it('refuses a scope outside the client\'s scopes with 400 invalid_scope', async () => {
      const narrow = await flow.client({ scopes: ['a'] });
      const code = await flow.code(narrow, user);
      expectOAuthError(await flow.exchange(narrow, code, { scope: 'a b' }), 400, 'invalid_scope');
      expectOAuthError(await flow.exchange(narrow, await flow.code(narrow, user), { scope: 'c' }), 400, 'invalid_scope');
    });

    it('issues an RFC 9068 access token (typ at+jwt, published kid) that verifies with the JWKS', async () => {
      const tokens = await flow.tokens(client, user);
      const jwksResponse = await fetch(`${app.baseUrl}/.well-known/jwks.json`);
      const jwks = (await jwksResponse.json()) as JSONWebKeySet;
      expect(jwks.keys.map((key) => key.alg)).toEqual(['ES256', 'RS256']); // access tokens: SIGNING_ALG's

      expect(decodeProtectedHeader(tokens.access_token)).toEqual({ alg: 'ES256', typ: 'at+jwt', kid: jwks.keys[0].kid });
      const { payload } = await jwtVerify(tokens.access_token, createLocalJWKSet(jwks), {
        issuer: app.baseUrl,
        audience: app.baseUrl,
        typ: 'at+jwt',
        algorithms: ['ES256'],
      });
      expect(payload).toEqual({
        iss: app.baseUrl,
        sub: await userId(app, user),
        aud: app.baseUrl,
        client_id: client.id,
        iat: expect.any(Number),
        exp: payload.iat! + 3600,
        jti: expect.stringMatching(UUID),
        sid: expect.stringMatching(UUID),
      });
      expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(30);
      // jti is unique per token
      const other = await flow.tokens(client, user);
      expect(decodeJwt(other.access_token).jti).not.toBe(payload.jti);
    });

    it('refuses a second use of a code with invalid_grant and revokes the tokens issued from it', async () => {
      const code = await flow.code(client, user);
      const first = expectTokenResponse(await flow.exchange(client, code), null);
      expect(await flow.isActive(client, first.access_token)).toBe(true);

      expectOAuthError(await flow.exchange(client, code), 400, 'invalid_grant');

      expectOAuthError(await flow.refresh(client, first.refresh_token), 400, 'invalid_grant');
      expect(await flow.isActive(client, first.access_token)).toBe(false);
      expect(await flow.isActive(client, first.refresh_token)).toBe(false);
    });

    it('lets exactly one of two concurrent exchanges of one code succeed, and then revokes its tokens', async () => {
      const code = await flow.code(client, user);
      const responses = await Promise.all([flow.exchange(client, code), flow.exchange(client, code)]);
      expect(responses.map((response) => response.status).sort()).toEqual([200, 400]);
      const winner = responses.find((response) => response.status === 200)!.body as unknown as TokenResponse;
      expectOAuthError(responses.find((response) => response.status === 400)!, 400, 'invalid_grant');
      expect(await flow.isActive(client, winner.access_token)).toBe(false);
    });

    it('refuses another client\'s code with invalid_grant and leaves it usable by its own client', async () => {
      const code = await flow.code(client, user);
      const thief = await flow.client();
      expectOAuthError(await flow.exchange(thief, code), 400, 'invalid_grant');
      expectTokenResponse(await flow.exchange(client, code), null);
    });

    it('refuses an expired code with invalid_grant', async () => {
      const code = await flow.code(client, user);
      await query(app.databaseUrl, "UPDATE authorization_codes SET expires_at = now() - interval '1 second' WHERE code_hash = $1", [
        storedHash(code),
      ]);
      expectOAuthError(await flow.exchange(client, code), 400, 'invalid_grant');
    });

    it('refuses an unknown code with invalid_grant', async () => {
      expectOAuthError(await flow.exchange(client, 'not-a-code-we-issued'), 400, 'invalid_grant');
    });

    describe('PKCE (S256)', () => {
      it('issues tokens for the matching code_verifier', async () => {
        const { verifier, challenge } = pkcePair();
        const code = await flow.code(client, user, { redirectUrl: LOOPBACK_REDIRECT, codeChallenge: challenge });
        expectTokenResponse(await flow.exchange(client, code, { code_verifier: flow.remember(verifier) }), null);
      });

      it('refuses a code with a challenge when the request has no code_verifier', async () => {
        const code = await flow.code(client, user, { redirectUrl: LOOPBACK_REDIRECT, codeChallenge: pkcePair().challenge });
        expectOAuthError(await flow.exchange(client, code), 400, 'invalid_grant');
      });

      it('refuses a wrong code_verifier', async () => {
        const code = await flow.code(client, user, { redirectUrl: LOOPBACK_REDIRECT, codeChallenge: pkcePair().challenge });
        expectOAuthError(await flow.exchange(client, code, { code_verifier: flow.remember(pkcePair().verifier) }), 400, 'invalid_grant');
      });

      it('refuses a code_verifier for a code that was requested without a challenge', async () => {
        const code = await flow.code(client, user);
        expectOAuthError(await flow.exchange(client, code, { code_verifier: flow.remember(pkcePair().verifier) }), 400, 'invalid_grant');
      });
    });

    describe('redirect_uri', () => {
      it('is optional, and accepted when it equals the redirect_url the code was issued for', async () => {
        expectTokenResponse(await flow.exchange(client, await flow.code(client, user)), null);
        expectTokenResponse(await flow.exchange(client, await flow.code(client, user), { redirect_uri: LOOPBACK_REDIRECT }), null);
      });

      it('is refused with invalid_grant when it differs from the bound one', async () => {
        const code = await flow.code(client, user);
        expectOAuthError(await flow.exchange(client, code, { redirect_uri: 'http://127.0.0.2:8765/callback' }), 400, 'invalid_grant');
      });

      it('is refused with invalid_grant for a polled code, which has no redirect_url', async () => {
        const code = await flow.code(client, user, {});
        expectOAuthError(await flow.exchange(client, code, { redirect_uri: LOOPBACK_REDIRECT }), 400, 'invalid_grant');
      });
    });
  });

  describe('client authentication', () => {
    it('accepts client_secret_basic with form-encoded, percent-encoded and encodeURIComponent credentials', async () => {
      for (const encode of [undefined, percentEncodeAll, encodeURIComponent]) {
        const code = await flow.code(client, user);
        const response = await postForm(app, '/sso/token', { grant_type: 'authorization_code', code }, { authorization: basicAuth(client.id, client.secret, encode) });
        flow.remember((response.body as unknown as TokenResponse).refresh_token ?? '');
        expectTokenResponse(response, null);
      }
    });

    it('form-decodes Basic credentials: "+" is a space, %XX a byte of UTF-8; an unencoded secret is refused', async () => {
      const spaced = await flow.client();
      const secret = flow.remember('a secret+with%25 spaces and Ö');
      await query(app.databaseUrl, 'UPDATE clients SET secret_hash = $1 WHERE id = $2', [storedHash(secret), spaced.id]);
      await query(app.databaseUrl, "SELECT pg_notify('vc_client_changed', $1)", [spaced.id]); // as every client change does

      const withBasic = async (authorization: string) => {
        const code = await flow.code(spaced, user);
        return postForm(app, '/sso/token', { grant_type: 'authorization_code', code }, { authorization });
      };
      // formEncode: spaces become '+', '+' becomes %2B, '%' becomes %25
      expect(basicAuth(spaced.id, secret)).toBe(`Basic ${Buffer.from(`${spaced.id}:a+secret%2Bwith%2525+spaces+and+%C3%96`).toString('base64')}`);
      expectTokenResponse(await withBasic(basicAuth(spaced.id, secret)), null);
      expectTokenResponse(await withBasic(basicAuth(spaced.id, secret, encodeURIComponent)), null);

      const raw = await withBasic(basicAuth(spaced.id, secret, (value) => value));
      expectOAuthError(raw, 401, 'invalid_client');
      expect(raw.headers.get('www-authenticate')).toMatch(/^Basic /);

      // The same secret in the form body is sent as it is.
      expectTokenResponse(await flow.exchange({ id: spaced.id, secret }, await flow.code(spaced, user)), null);
    });

    it('accepts a body client_id that repeats the Basic one', async () => {
      const code = await flow.code(client, user);
      const response = await postForm(
        app,
        '/sso/token',
        { grant_type: 'authorization_code', code, client_id: client.id },
        { authorization: basicAuth(client.id, client.secret) },
      );
      flow.remember((response.body as unknown as TokenResponse).refresh_token ?? '');
      expectTokenResponse(response, null);
    });

    it('refuses credentials in both the Authorization header and the body with 400 invalid_request', async () => {
      const code = await flow.code(client, user);
      const both = await postForm(app, '/sso/token', { grant_type: 'authorization_code', code, ...credentials(client) }, { authorization: basicAuth(client.id, client.secret) });
      expectOAuthError(both, 400, 'invalid_request');
      const mismatch = await postForm(
        app,
        '/sso/token',
        { grant_type: 'authorization_code', code, client_id: (await flow.client()).id },
        { authorization: basicAuth(client.id, client.secret) },
      );
      expectOAuthError(mismatch, 400, 'invalid_request');
      // Neither request consumed the code.
      expectTokenResponse(await flow.exchange(client, code), null);
    });

    it('refuses a wrong client_secret in the body with 401 invalid_client and no WWW-Authenticate', async () => {
      const code = await flow.code(client, user);
      const response = await flow.exchange({ id: client.id, secret: `${client.secret}x` }, code);
      expectOAuthError(response, 401, 'invalid_client');
      expect(response.headers.get('www-authenticate')).toBeNull();
    });

    it('refuses a wrong Basic secret with 401 invalid_client and a Basic WWW-Authenticate challenge', async () => {
      const code = await flow.code(client, user);
      const response = await postForm(app, '/sso/token', { grant_type: 'authorization_code', code }, { authorization: basicAuth(client.id, `${client.secret}x`) });
      expectOAuthError(response, 401, 'invalid_client');
      expect(response.headers.get('www-authenticate')).toBe('Basic realm="voyage-connect", charset="UTF-8"');
    });

    it('refuses a malformed Authorization header with 401 invalid_client and a Basic challenge', async () => {
      for (const authorization of ['Bearer abc', 'Basic !!!', `Basic ${Buffer.from('no-colon').toString('base64')}`]) {
        const response = await postForm(app, '/sso/token', { grant_type: 'authorization_code', code: 'x' }, { authorization });
        expectOAuthError(response, 401, 'invalid_client');
        expect(response.headers.get('www-authenticate')).toMatch(/^Basic /);
      }
    });

    it('refuses an unknown client_id with 401 invalid_client', async () => {
      const response = await flow.exchange({ id: 'no-such-client', secret: client.secret }, 'x');
      expectOAuthError(response, 401, 'invalid_client');
    });

    it('refuses a request without client credentials with 401 invalid_client and no challenge', async () => {
      const code = await flow.code(client, user);
      const none = await postForm(app, '/sso/token', { grant_type: 'authorization_code', code });
      expectOAuthError(none, 401, 'invalid_client');
      expect(none.headers.get('www-authenticate')).toBeNull();
      const idOnly = await postForm(app, '/sso/token', { grant_type: 'authorization_code', code, client_id: client.id });
      expectOAuthError(idOnly, 401, 'invalid_client');
      const emptySecret = await postForm(app, '/sso/token', { grant_type: 'authorization_code', code, client_id: client.id, client_secret: '' });
      expectOAuthError(emptySecret, 401, 'invalid_client');
    });

    it('refuses a disabled client with 401 invalid_client, for codes and refresh tokens it already holds', async () => {
      const disabled = await flow.client();
      const tokens = await flow.tokens(disabled, user);
      const code = await flow.code(disabled, user);
      await app.get(ClientsService).setEnabled(disabled.id, false);
      expectOAuthError(await flow.exchange(disabled, code), 401, 'invalid_client');
      expectOAuthError(await flow.refresh(disabled, tokens.refresh_token), 401, 'invalid_client');
    });
  });

  describe('request format', () => {
    it('refuses a repeated parameter with 400 invalid_request and leaves the code usable', async () => {
      const code = await flow.code(client, user);
      const body = new URLSearchParams({ grant_type: 'authorization_code', code, ...credentials(client) });
      body.append('code', code);
      expectOAuthError(await postForm(app, '/sso/token', body), 400, 'invalid_request');
      expectTokenResponse(await flow.exchange(client, code), null);
    });

    it('ignores unknown parameters', async () => {
      const code = await flow.code(client, user);
      expectTokenResponse(await flow.exchange(client, code, { nonce: 'n-1', audience: 'somewhere', foo: 'bar' }), null);
    });

    it('treats an empty parameter as absent: empty code is invalid_request, empty scope is no scope', async () => {
      expectOAuthError(await flow.exchange(client, ''), 400, 'invalid_request');
      expectTokenResponse(await flow.exchange(client, await flow.code(client, user), { scope: '' }), null);
    });

    it('refuses a request without grant_type with 400 invalid_request', async () => {
      expectOAuthError(await postForm(app, '/sso/token', { code: 'x', ...credentials(client) }), 400, 'invalid_request');
    });

    it('refuses grant types other than authorization_code, refresh_token and the device grant with 400 unsupported_grant_type', async () => {
      const clientCredentials = await flow.client({ grants: ['authorization_code', 'refresh_token', 'client_credentials'] });
      for (const grantType of ['password', 'client_credentials', 'implicit', 'urn:ietf:params:oauth:grant-type:jwt-bearer', 'device_code']) {
        const response = await postForm(app, '/sso/token', { grant_type: grantType, username: user.username, password: user.password, ...credentials(clientCredentials) });
        expectOAuthError(response, 400, 'unsupported_grant_type');
      }
    });

    it('refuses refresh_token for a client without that grant with 400 unauthorized_client', async () => {
      const codeOnly = await flow.client({ grants: ['authorization_code'] });
      const tokens = await flow.tokens(codeOnly, user);
      expectOAuthError(await flow.refresh(codeOnly, tokens.refresh_token), 400, 'unauthorized_client');
    });

    it('refuses a JSON body with 415 invalid_request and leaves the code usable', async () => {
      const code = await flow.code(client, user);
      const json = await postForm(
        app,
        '/sso/token',
        JSON.stringify({ grant_type: 'authorization_code', code, ...credentials(client) }),
        { 'content-type': 'application/json' },
      );
      flow.remember((json.body as unknown as TokenResponse).refresh_token ?? '');
      expectOAuthError(json, 415, 'invalid_request');
      const nonString = await postForm(app, '/sso/token', JSON.stringify({ grant_type: 'authorization_code', code: 42 }), {
        'content-type': 'application/json',
      });
      expectOAuthError(nonString, 415, 'invalid_request');
      expectTokenResponse(await flow.exchange(client, code), null);
    });

    it('refuses a text/plain body with 415 invalid_request', async () => {
      const response = await postForm(app, '/sso/token', `grant_type=authorization_code&code=x`, { 'content-type': 'text/plain' });
      expectOAuthError(response, 415, 'invalid_request');
    });

    it('refuses a request without a body with 400 invalid_request', async () => {
      const response = await fetch(`${app.baseUrl}/sso/token`, { method: 'POST' });
      expect(response.status).toBe(400);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(await response.json()).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
    });
  });

  describe('grant_type=refresh_token', () => {
    it('rotates: a new refresh token and access token, the grant\'s scope, and the new token refreshes again', async () => {
      const first = await flow.tokens(client, user, { scope: 'a b' });
      const second = expectTokenResponse(await flow.refresh(client, first.refresh_token), 'a b');
      expect(second.refresh_token).not.toBe(first.refresh_token);
      expect(second.access_token).not.toBe(first.access_token);
      expect(decodeJwt(second.access_token)).toMatchObject({ sub: await userId(app, user), client_id: client.id, scope: 'a b' });
      const third = expectTokenResponse(await flow.refresh(client, second.refresh_token), 'a b');
      expect(await flow.isActive(client, third.access_token)).toBe(true);
    });

    it('answers scope null when the grant has none', async () => {
      const first = await flow.tokens(client, user);
      expectTokenResponse(await flow.refresh(client, first.refresh_token), null);
    });

    it('refuses a retired refresh token with invalid_grant and revokes the whole grant (reuse detection)', async () => {
      const first = await flow.tokens(client, user);
      const second = expectTokenResponse(await flow.refresh(client, first.refresh_token), null);
      const third = expectTokenResponse(await flow.refresh(client, second.refresh_token), null);

      expectOAuthError(await flow.refresh(client, first.refresh_token), 400, 'invalid_grant');

      expectOAuthError(await flow.refresh(client, third.refresh_token), 400, 'invalid_grant');
      expect(await flow.isActive(client, third.access_token)).toBe(false);
      expect(await flow.isActive(client, first.access_token)).toBe(false);
    });

    it('refuses another client\'s refresh token with invalid_grant without revoking the grant', async () => {
      const tokens = await flow.tokens(client, user);
      const other = await flow.client();
      expectOAuthError(await flow.refresh(other, tokens.refresh_token), 400, 'invalid_grant');
      expect(await flow.isActive(client, tokens.access_token)).toBe(true);
      expectTokenResponse(await flow.refresh(client, tokens.refresh_token), null);
    });

    it('with REFRESH_REUSE_GRACE=0, of two concurrent refreshes one wins and the reuse then revokes the grant', async () => {
      const tokens = await flow.tokens(client, user);
      const responses = await Promise.all([flow.refresh(client, tokens.refresh_token), flow.refresh(client, tokens.refresh_token)]);
      expect(responses.map((response) => response.status).sort()).toEqual([200, 400]);
      expectOAuthError(responses.find((response) => response.status === 400)!, 400, 'invalid_grant');
      const winner = expectTokenResponse(responses.find((response) => response.status === 200)!, null);
      expectOAuthError(await flow.refresh(client, winner.refresh_token), 400, 'invalid_grant');
      expect(await flow.isActive(client, winner.access_token)).toBe(false);
    });

    it('narrows the scope on request, refuses widening with invalid_scope, and keeps the token usable after that refusal', async () => {
      const first = await flow.tokens(client, user, { scope: 'a b' });
      const narrowed = expectTokenResponse(await flow.refresh(client, first.refresh_token, { scope: 'a' }), 'a');
      expect(decodeJwt(narrowed.access_token).scope).toBe('a');

      // 'c' is allowed for the client but was never granted by the user.
      expectOAuthError(await flow.refresh(client, narrowed.refresh_token, { scope: 'a c' }), 400, 'invalid_scope');
      // Without scope, RFC 6749 §6: the scope originally granted.
      expectTokenResponse(await flow.refresh(client, narrowed.refresh_token), 'a b');
    });

    it('refuses any scope for a grant that has none with invalid_scope', async () => {
      const tokens = await flow.tokens(client, user);
      expectOAuthError(await flow.refresh(client, tokens.refresh_token, { scope: 'a' }), 400, 'invalid_scope');
    });

    it('refuses an expired refresh token with invalid_grant', async () => {
      const tokens = await flow.tokens(client, user);
      await query(app.databaseUrl, "UPDATE refresh_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = $1", [
        storedHash(tokens.refresh_token),
      ]);
      expectOAuthError(await flow.refresh(client, tokens.refresh_token), 400, 'invalid_grant');
    });

    it('refuses an unknown refresh token with invalid_grant and a missing one with invalid_request', async () => {
      expectOAuthError(await flow.refresh(client, 'not-a-refresh-token'), 400, 'invalid_grant');
      expectOAuthError(await postForm(app, '/sso/token', { grant_type: 'refresh_token', ...credentials(client) }), 400, 'invalid_request');
    });

    it('accepts client_secret_basic', async () => {
      const tokens = await flow.tokens(client, user);
      const response = await postForm(
        app,
        '/sso/token',
        { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
        { authorization: basicAuth(client.id, client.secret) },
      );
      flow.remember((response.body as unknown as TokenResponse).refresh_token ?? '');
      expectTokenResponse(response, null);
    });
  });

  it('never writes a client secret, password, code, PKCE verifier or token into the logs', async () => {
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The requests above were logged (debug lines of refused requests included)...
    expect(app.logs.some((line) => line.context === 'OAuth' && String(line.msg).startsWith('invalid_grant'))).toBe(true);
    expect(flow.secrets.length).toBeGreaterThan(20);
    // ...but none of what they carried.
    const everything = JSON.stringify(app.logs);
    const leaked = flow.secrets.filter((secret) => secret.length >= 8 && everything.includes(secret));
    expect(leaked).toEqual([]);
  });
});

describe('POST /sso/token with REFRESH_REUSE_GRACE=30', () => {
  let app: TestApp;
  const flow = tokenFlow(() => app);
  let user: PortalUser;
  let client: TestClient;

  beforeAll(async () => {
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0', HOUSEKEEPING_INTERVAL: '86400', REFRESH_REUSE_GRACE: '30' });
    user = await flow.user();
    client = await flow.client();
  });
  afterAll(() => app?.close());

  it('refuses the loser of two concurrent refreshes with invalid_grant but keeps the winner\'s tokens working', async () => {
    const tokens = await flow.tokens(client, user);
    const responses = await Promise.all([flow.refresh(client, tokens.refresh_token), flow.refresh(client, tokens.refresh_token)]);
    expect(responses.map((response) => response.status).sort()).toEqual([200, 400]);
    expectOAuthError(responses.find((response) => response.status === 400)!, 400, 'invalid_grant');
    const winner = expectTokenResponse(responses.find((response) => response.status === 200)!, null);

    expect(await flow.isActive(client, winner.access_token)).toBe(true);
    expectTokenResponse(await flow.refresh(client, winner.refresh_token), null);
  });

  it('still revokes the grant when a retired refresh token comes back after the grace period', async () => {
    const first = await flow.tokens(client, user);
    const second = expectTokenResponse(await flow.refresh(client, first.refresh_token), null);
    await query(app.databaseUrl, "UPDATE refresh_tokens SET rotated_at = now() - interval '31 seconds' WHERE token_hash = $1", [
      storedHash(first.refresh_token),
    ]);
    expectOAuthError(await flow.refresh(client, first.refresh_token), 400, 'invalid_grant');
    expectOAuthError(await flow.refresh(client, second.refresh_token), 400, 'invalid_grant');
    expect(await flow.isActive(client, second.access_token)).toBe(false);
  });

  it('still revokes the tokens of a code presented twice', async () => {
    const code = await flow.code(client, user);
    const tokens = expectTokenResponse(await flow.exchange(client, code), null);
    expectOAuthError(await flow.exchange(client, code), 400, 'invalid_grant');
    expectOAuthError(await flow.refresh(client, tokens.refresh_token), 400, 'invalid_grant');
  });
});
