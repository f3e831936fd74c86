import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import type { GrantType } from '../../../src/clients/client.entity.js';
import { PUBLISH_SCOPE, SUBSCRIBE_SCOPE } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { basicAuth, credentials, type FormResponse, postForm } from '../../factories/token-flow.factory.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const TOKEN_PATH = '/public/api/oauth2/token';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BASIC_CHALLENGE = 'Basic realm="voyage-connect", charset="UTF-8"';

interface ClientTokenResponse {
  access_token: string;
  expires_in: number;
  token_type: string;
  scope: string;
  resource?: string;
}

/** RFC 6749 §5.2 error body, never cached. */
function expectOAuthError(response: FormResponse, status: number, error: string) {
  expect({ status: response.status, body: response.body }).toStrictEqual({ status, body: { error, error_description: expect.any(String) } });
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(response.headers.get('cache-control')).toBe('no-store');
  expect(response.headers.get('pragma')).toBe('no-cache');
}

/** The notification service's token response: exactly these fields (`resource` only when asked for), never cached. */
function expectTokenResponse(response: FormResponse, expected: { expiresIn: number; scope: string; resource?: string }): ClientTokenResponse {
  expect({ status: response.status, body: response.body }, response.text).toStrictEqual({
    status: 200,
    body: {
      access_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
      expires_in: expected.expiresIn,
      token_type: 'Bearer',
      scope: expected.scope,
      ...(expected.resource === undefined ? {} : { resource: expected.resource }),
    },
  });
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(response.headers.get('cache-control')).toBe('no-store');
  expect(response.headers.get('pragma')).toBe('no-cache');
  return response.body as unknown as ClientTokenResponse;
}

const tokenRequest = (app: TestApp, params: Record<string, string> | URLSearchParams | string, headers: Record<string, string> = {}) =>
  postForm(app, TOKEN_PATH, params, headers);

const clientCredentials = (app: TestApp, client: TestClient, extra: Record<string, string> = {}) =>
  tokenRequest(app, { grant_type: 'client_credentials', ...credentials(client), ...extra });

async function jwks(app: TestApp): Promise<JSONWebKeySet> {
  const response = await fetch(`${app.baseUrl}/.well-known/jwks.json`);
  expect(response.status).toBe(200);
  return (await response.json()) as JSONWebKeySet;
}

describe('POST /public/api/oauth2/token, grant_type=client_credentials', () => {
  let app: TestApp;
  /** A device: client_credentials, no explicit scopes, so the default scope is its only one. */
  let device: TestClient;
  /** A client allowed several scopes. */
  let multi: TestClient;
  const secrets: string[] = [];
  const client = async (options: { grants?: GrantType[]; scopes?: string[] } = {}) => {
    const created = await createClient(app, { grants: ['client_credentials'], ...options });
    secrets.push(created.secret);
    return created;
  };

  beforeAll(async () => {
    app = await startTestApp({ HOUSEKEEPING_INTERVAL: '86400', ALLOWED_RESOURCES: 'https://notifications.example.com/voyage/notification/v1,https://notifications.example.com' });
    device = await client();
    multi = await client({ scopes: [SUBSCRIBE_SCOPE, PUBLISH_SCOPE, 'reports:read'] });
  });
  afterAll(() => app?.close());

  describe('client authentication', () => {
    it('issues a token to client_secret_post credentials: exactly {access_token, expires_in: 3600, token_type: "Bearer", scope}, not cacheable', async () => {
      const body = expectTokenResponse(await clientCredentials(app, device), { expiresIn: 3600, scope: SUBSCRIBE_SCOPE });
      secrets.push(body.access_token);
    });

    it('issues the same response to client_secret_basic credentials', async () => {
      const response = await tokenRequest(app, { grant_type: 'client_credentials' }, { authorization: basicAuth(device.id, device.secret) });
      const body = expectTokenResponse(response, { expiresIn: 3600, scope: SUBSCRIBE_SCOPE });
      expect(decodeJwt(body.access_token).client_id).toBe(device.id);
    });

    it('refuses a wrong secret sent in the body with 401 invalid_client and no Basic challenge', async () => {
      const response = await clientCredentials(app, { id: device.id, secret: `${device.secret}x` });
      expectOAuthError(response, 401, 'invalid_client');
      expect(response.headers.get('www-authenticate')).toBeNull();
    });

    it('refuses a wrong secret sent with HTTP Basic with 401 invalid_client and a Basic WWW-Authenticate challenge', async () => {
      const response = await tokenRequest(app, { grant_type: 'client_credentials' }, { authorization: basicAuth(device.id, 'not-the-secret') });
      expectOAuthError(response, 401, 'invalid_client');
      expect(response.headers.get('www-authenticate')).toBe(BASIC_CHALLENGE);
    });

    it('refuses an unknown client_id with 401 invalid_client', async () => {
      expectOAuthError(await clientCredentials(app, { id: 'no-such-client', secret: device.secret }), 401, 'invalid_client');
    });

    it('refuses a request without any client credentials with 401 invalid_client', async () => {
      expectOAuthError(await tokenRequest(app, { grant_type: 'client_credentials' }), 401, 'invalid_client');
    });

    it('refuses a disabled client with 401 invalid_client, and issues again once it is enabled', async () => {
      const disabled = await client();
      expectTokenResponse(await clientCredentials(app, disabled), { expiresIn: 3600, scope: SUBSCRIBE_SCOPE });
      await app.get(ClientsService).setEnabled(disabled.id, false);
      expectOAuthError(await clientCredentials(app, disabled), 401, 'invalid_client');
      const basic = await tokenRequest(app, { grant_type: 'client_credentials' }, { authorization: basicAuth(disabled.id, disabled.secret) });
      expectOAuthError(basic, 401, 'invalid_client');
      expect(basic.headers.get('www-authenticate')).toBe(BASIC_CHALLENGE);
      await app.get(ClientsService).setEnabled(disabled.id, true);
      expectTokenResponse(await clientCredentials(app, disabled), { expiresIn: 3600, scope: SUBSCRIBE_SCOPE });
    });
  });

  describe('grants', () => {
    it('refuses a client registered without the client_credentials grant with 400 unauthorized_client', async () => {
      const helperClient = await client({ grants: ['authorization_code', 'refresh_token'], scopes: [SUBSCRIBE_SCOPE] });
      expectOAuthError(await clientCredentials(app, helperClient), 400, 'unauthorized_client');
      expectOAuthError(await clientCredentials(app, helperClient, { scope: SUBSCRIBE_SCOPE }), 400, 'unauthorized_client');
    });

    it('refuses grant_type=authorization_code and refresh_token at this route with 400 unsupported_grant_type, even for a client holding those grants', async () => {
      const everything = await client({ grants: ['authorization_code', 'refresh_token', 'client_credentials'] });
      expectOAuthError(await tokenRequest(app, { grant_type: 'authorization_code', code: 'abc', ...credentials(everything) }), 400, 'unsupported_grant_type');
      expectOAuthError(await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: 'abc', ...credentials(everything) }), 400, 'unsupported_grant_type');
    });

    it('refuses an unknown grant_type with 400 unsupported_grant_type and a missing one with 400 invalid_request', async () => {
      expectOAuthError(await tokenRequest(app, { grant_type: 'password', ...credentials(device) }), 400, 'unsupported_grant_type');
      expectOAuthError(await tokenRequest(app, credentials(device)), 400, 'invalid_request');
    });
  });

  describe('scope', () => {
    it('grants DEFAULT_CLIENT_SCOPE (notification:subscribe) when the request names none, to a client registered without scopes', async () => {
      const shown = await app.get(ClientsService).show(device.id);
      expect(shown.scopes).toEqual([SUBSCRIBE_SCOPE]);
      const body = expectTokenResponse(await clientCredentials(app, device), { expiresIn: 3600, scope: SUBSCRIBE_SCOPE });
      expect(decodeJwt(body.access_token).scope).toBe(SUBSCRIBE_SCOPE);
    });

    it('treats an empty scope parameter like an omitted one', async () => {
      expectTokenResponse(await clientCredentials(app, device, { scope: '' }), { expiresIn: 3600, scope: SUBSCRIBE_SCOPE });
    });

    it('refuses with 400 invalid_scope a request naming no scope from a client not allowed the default scope', async () => {
      const reportsOnly = await client({ scopes: ['reports:read'] });
      expectOAuthError(await clientCredentials(app, reportsOnly), 400, 'invalid_scope');
      expectTokenResponse(await clientCredentials(app, reportsOnly, { scope: 'reports:read' }), { expiresIn: 3600, scope: 'reports:read' });
    });

    it('refuses a scope outside the client\'s scopes with 400 invalid_scope, also when mixed with allowed ones', async () => {
      expectOAuthError(await clientCredentials(app, device, { scope: PUBLISH_SCOPE }), 400, 'invalid_scope');
      expectOAuthError(await clientCredentials(app, device, { scope: `${SUBSCRIBE_SCOPE} ${PUBLISH_SCOPE}` }), 400, 'invalid_scope');
      expectOAuthError(await clientCredentials(app, multi, { scope: `${PUBLISH_SCOPE} admin` }), 400, 'invalid_scope');
    });

    it('grants several allowed scopes at once and names them all in the response and the token', async () => {
      const response = await clientCredentials(app, multi, { scope: `${PUBLISH_SCOPE} reports:read` });
      const body = expectTokenResponse(response, { expiresIn: 3600, scope: `${PUBLISH_SCOPE} reports:read` });
      expect(decodeJwt(body.access_token).scope).toBe(`${PUBLISH_SCOPE} reports:read`);
    });

    it('refuses a scope that is not a space-delimited list of scope tokens with 400 invalid_request', async () => {
      expectOAuthError(await clientCredentials(app, multi, { scope: `${PUBLISH_SCOPE}  reports:read` }), 400, 'invalid_request');
      expectOAuthError(await clientCredentials(app, multi, { scope: 'a"b' }), 400, 'invalid_request');
    });
  });

  describe('resource (RFC 8707)', () => {
    it('echoes a listed resource (ALLOWED_RESOURCES) in the response and makes it the token\'s audience', async () => {
      const resource = 'https://notifications.example.com/voyage/notification/v1';
      const body = expectTokenResponse(await clientCredentials(app, device, { resource }), { expiresIn: 3600, scope: SUBSCRIBE_SCOPE, resource });
      expect(decodeJwt(body.access_token).aud).toBe(resource);
    });

    it('omits resource from the response without one, and the token\'s audience is the API', async () => {
      const body = expectTokenResponse(await clientCredentials(app, device), { expiresIn: 3600, scope: SUBSCRIBE_SCOPE });
      expect(body).not.toHaveProperty('resource');
      expect(decodeJwt(body.access_token).aud).toBe(app.baseUrl);
    });

    it('refuses a resource with a fragment with 400 invalid_target', async () => {
      expectOAuthError(await clientCredentials(app, device, { resource: 'https://notifications.example.com/api#part' }), 400, 'invalid_target');
      expectOAuthError(await clientCredentials(app, device, { resource: 'https://notifications.example.com/api#' }), 400, 'invalid_target');
    });

    it('refuses a resource that is not an absolute URI with 400 invalid_target', async () => {
      expectOAuthError(await clientCredentials(app, device, { resource: '/voyage/notification/v1' }), 400, 'invalid_target');
      expectOAuthError(await clientCredentials(app, device, { resource: 'notifications.example.com' }), 400, 'invalid_target');
    });

    it('refuses a repeated resource parameter with 400 invalid_request', async () => {
      const params = new URLSearchParams({ grant_type: 'client_credentials', ...credentials(device) });
      params.append('resource', 'https://a.example.com/');
      params.append('resource', 'https://b.example.com/');
      expectOAuthError(await tokenRequest(app, params), 400, 'invalid_request');
    });
  });

  describe('the access token', () => {
    it('is an RFC 9068 JWT (typ at+jwt, published kid) with exactly iss, sub = client_id, aud, client_id, scope, iat, exp = iat + 3600, jti, verifiable with the JWKS', async () => {
      const before = Math.floor(Date.now() / 1000);
      const body = expectTokenResponse(await clientCredentials(app, device), { expiresIn: 3600, scope: SUBSCRIBE_SCOPE });
      const after = Math.ceil(Date.now() / 1000);
      const keySet = await jwks(app);
      expect(keySet.keys.map((key) => key.alg)).toEqual(['ES256', 'RS256']); // access tokens: SIGNING_ALG's

      expect(decodeProtectedHeader(body.access_token)).toStrictEqual({ alg: 'ES256', typ: 'at+jwt', kid: keySet.keys[0].kid });
      const { payload } = await jwtVerify(body.access_token, createLocalJWKSet(keySet), {
        issuer: app.baseUrl,
        audience: app.baseUrl,
        typ: 'at+jwt',
        algorithms: ['ES256'],
      });
      expect(payload).toStrictEqual({
        iss: app.baseUrl,
        sub: device.id,
        aud: app.baseUrl,
        client_id: device.id,
        scope: SUBSCRIBE_SCOPE,
        iat: expect.any(Number),
        exp: expect.any(Number),
        jti: expect.stringMatching(UUID),
      });
      expect(payload.iat).toBeGreaterThanOrEqual(before);
      expect(payload.iat).toBeLessThanOrEqual(after);
      expect(payload.exp! - payload.iat!).toBe(3600);
    });

    it('carries a requested resource as aud and still verifies against the JWKS for that audience', async () => {
      const resource = 'https://notifications.example.com';
      const body = expectTokenResponse(await clientCredentials(app, multi, { scope: PUBLISH_SCOPE, resource }), {
        expiresIn: 3600,
        scope: PUBLISH_SCOPE,
        resource,
      });
      const { payload } = await jwtVerify(body.access_token, createLocalJWKSet(await jwks(app)), { issuer: app.baseUrl, audience: resource, typ: 'at+jwt' });
      expect(payload).toMatchObject({ sub: multi.id, client_id: multi.id, scope: PUBLISH_SCOPE, aud: resource });
    });

    it('gets a new jti on every request', async () => {
      const first = expectTokenResponse(await clientCredentials(app, device), { expiresIn: 3600, scope: SUBSCRIBE_SCOPE });
      const second = expectTokenResponse(await clientCredentials(app, device), { expiresIn: 3600, scope: SUBSCRIBE_SCOPE });
      expect(decodeJwt(first.access_token).jti).not.toBe(decodeJwt(second.access_token).jti);
    });
  });

  describe('request format', () => {
    it('refuses a JSON body with 415 invalid_request, even with valid credentials', async () => {
      const response = await tokenRequest(app, JSON.stringify({ grant_type: 'client_credentials', ...credentials(device) }), {
        'content-type': 'application/json',
      });
      expectOAuthError(response, 415, 'invalid_request');
    });

    it('refuses a repeated parameter with 400 invalid_request', async () => {
      const scopeTwice = new URLSearchParams({ grant_type: 'client_credentials', ...credentials(multi) });
      scopeTwice.append('scope', SUBSCRIBE_SCOPE);
      scopeTwice.append('scope', PUBLISH_SCOPE);
      expectOAuthError(await tokenRequest(app, scopeTwice), 400, 'invalid_request');

      const grantTwice = new URLSearchParams({ grant_type: 'client_credentials', ...credentials(device) });
      grantTwice.append('grant_type', 'client_credentials');
      expectOAuthError(await tokenRequest(app, grantTwice), 400, 'invalid_request');
    });

    it('refuses credentials sent both with Basic and in the body with 400 invalid_request', async () => {
      const response = await tokenRequest(app, { grant_type: 'client_credentials', ...credentials(device) }, { authorization: basicAuth(device.id, device.secret) });
      expectOAuthError(response, 400, 'invalid_request');
    });
  });

  it('never writes a client secret or an issued access token to the logs', async () => {
    const logged = JSON.stringify(app.logs);
    expect(secrets.length).toBeGreaterThan(2);
    for (const secret of secrets) expect(logged).not.toContain(secret);
  });
});

describe('POST /public/api/oauth2/token with CLIENT_TOKEN_TTL=120 and DEFAULT_CLIENT_SCOPE=reports:subscribe', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({ CLIENT_TOKEN_TTL: '120', DEFAULT_CLIENT_SCOPE: 'reports:subscribe', HOUSEKEEPING_INTERVAL: '86400' });
  });
  afterAll(() => app?.close());

  it('answers expires_in: 120 and signs exp = iat + 120', async () => {
    const device = await createClient(app, { grants: ['client_credentials'] });
    const body = expectTokenResponse(await clientCredentials(app, device), { expiresIn: 120, scope: 'reports:subscribe' });
    const { payload } = await jwtVerify(body.access_token, createLocalJWKSet(await jwks(app)), { issuer: app.baseUrl, typ: 'at+jwt' });
    expect(payload.exp! - payload.iat!).toBe(120);
  });

  it('grants the configured DEFAULT_CLIENT_SCOPE when the request names none, and refuses notification:subscribe to a client registered without scopes', async () => {
    const device = await createClient(app, { grants: ['client_credentials'] });
    const body = expectTokenResponse(await clientCredentials(app, device), { expiresIn: 120, scope: 'reports:subscribe' });
    expect(decodeJwt(body.access_token).scope).toBe('reports:subscribe');
    expectOAuthError(await clientCredentials(app, device, { scope: SUBSCRIBE_SCOPE }), 400, 'invalid_scope');
  });
});
