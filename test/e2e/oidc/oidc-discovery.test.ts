import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { issueTokens, LOOPBACK_PATTERN, LOOPBACK_REDIRECT } from '../../factories/token-flow.factory.js';
import { freePort } from '../../setup/free-port.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// OpenID Connect Discovery 1.0: the document, its issuer (the RFC 8414 document's and the access
// tokens' `iss`), and openid-client 6's discovery() (OIDC algorithm), which refuses a document
// whose issuer is not the one it was asked for, also for an IDENTITY_URL with a path.

const getJson = async (url: string) => {
  const response = await fetch(url);
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
};

/** openid-client's discovery from the issuer identifier; plain http on 127.0.0.1 needs allowInsecureRequests. */
const discover = (issuer: string, client: TestClient) =>
  oidc.discovery(new URL(issuer), client.id, undefined, oidc.ClientSecretBasic(client.secret), { execute: [oidc.allowInsecureRequests] });

describe('GET /.well-known/openid-configuration', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app?.close());

  it('lists the issuer, the endpoints and what the provider supports, cacheable for five minutes', async () => {
    const { status, headers, body } = await getJson(`${app.baseUrl}/.well-known/openid-configuration`);
    expect(status).toBe(200);
    expect(headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(headers.get('cache-control')).toBe('public, max-age=300');
    const base = app.baseUrl;
    const clientAuth = ['client_secret_basic', 'client_secret_post'];
    expect(body).toEqual({
      issuer: base,
      authorization_endpoint: `${base}/sso/authorize`,
      token_endpoint: `${base}/sso/token`,
      userinfo_endpoint: `${base}/sso/userinfo`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      end_session_endpoint: `${base}/sso/logout`,
      device_authorization_endpoint: `${base}/sso/device_authorization`,
      introspection_endpoint: `${base}/sso/introspect`,
      revocation_endpoint: `${base}/sso/revoke`,
      registration_endpoint: `${base}/sso/register`,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256', 'ES256'],
      code_challenge_methods_supported: ['S256'],
      scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
      claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'at_hash', 'sid', 'name', 'preferred_username', 'updated_at', 'email', 'email_verified'],
      token_endpoint_auth_methods_supported: [...clientAuth, 'none'],
      introspection_endpoint_auth_methods_supported: clientAuth,
      revocation_endpoint_auth_methods_supported: [...clientAuth, 'none'],
      authorization_response_iss_parameter_supported: true,
      prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
      claims_parameter_supported: false,
      service_documentation: `${base}/docs`,
    });
  });

  it("has the RFC 8414 document's issuer and the same value for every field both have, and that issuer is the access tokens' iss", async () => {
    const openid = (await getJson(`${app.baseUrl}/.well-known/openid-configuration`)).body;
    const oauth = (await getJson(`${app.baseUrl}/.well-known/oauth-authorization-server`)).body;
    expect(openid.issuer).toBe(app.env.identityUrl);
    expect(oauth.issuer).toBe(openid.issuer);
    const shared = Object.keys(oauth);
    expect(shared.length).toBeGreaterThan(10);
    for (const field of shared) expect(openid[field], field).toEqual(oauth[field]);

    const client = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
    const { access_token } = await issueTokens(app, client, await createUser(app), { redirectUrl: LOOPBACK_REDIRECT });
    expect(decodeJwt(access_token).iss).toBe(openid.issuer);
  });

  it("is accepted by openid-client 6's OpenID Connect discovery, which checks the issuer", async () => {
    const client = await createClient(app);
    const metadata = (await discover(app.env.identityUrl, client)).serverMetadata();
    expect(metadata.issuer).toBe(app.env.identityUrl);
    expect(metadata).toMatchObject({ userinfo_endpoint: `${app.baseUrl}/sso/userinfo`, end_session_endpoint: `${app.baseUrl}/sso/logout` });
    expect(metadata.supportsPKCE('S256')).toBe(true);
  });
});

describe('GET /.well-known/openid-configuration with an issuer that has a path', () => {
  let app: TestApp;
  let base: string;
  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    app = await startTestApp({ PORT: String(port), IDENTITY_URL: `${base}/realms/fleet` });
  });
  afterAll(() => app?.close());

  it('is served below the issuer (Discovery §4), where openid-client looks for it, and names that issuer', async () => {
    const client = await createClient(app);
    const metadata = (await discover(`${base}/realms/fleet`, client)).serverMetadata();
    expect(metadata.issuer).toBe(`${base}/realms/fleet`);
    expect(metadata.token_endpoint).toBe(`${base}/sso/token`);
    const below = await getJson(`${base}/realms/fleet/.well-known/openid-configuration?any=query`);
    expect(below.status).toBe(200);
    expect(below.headers.get('cache-control')).toBe('public, max-age=300');
    expect(below.body).toEqual((await getJson(`${base}/.well-known/openid-configuration`)).body);
    // The RFC 8414 copy at its path-inserted address names the same issuer.
    expect((await getJson(`${base}/.well-known/oauth-authorization-server/realms/fleet`)).body.issuer).toBe(`${base}/realms/fleet`);
  });

  it('is not served below any other path', async () => {
    for (const path of ['/realms/other', '/realms', '/realms/fleet/x', '/realms/FLEET']) {
      expect((await fetch(`${base}${path}/.well-known/openid-configuration`)).status, path).toBe(404);
    }
  });
});
