import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, createPublicClient, createUser } from '../../factories/oauth.factory.js';
import { userId } from '../../factories/token-flow.factory.js';
import { FormBrowser } from '../../setup/form-browser.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// A second relying party library, independent of openid-client's high-level API: oauth4webapi 3
// (panva's low-level OAuth 2 / OpenID Connect client, each protocol step a function of its own).
// OpenID Connect discovery, the authorization code flow with PKCE and nonce through the login
// page, the authorization response (state, RFC 9207 iss), the token response with its ID token
// (claims, nonce, at_hash, signature against the discovered JWKS), userinfo, and a refresh.

const REDIRECT = 'http://127.0.0.1:8765/callback';
/** Plain http on 127.0.0.1: the test app has no TLS. */
const INSECURE = { [oauth.allowInsecureRequests]: true };

describe('interoperability with oauth4webapi 3', () => {
  let app: TestApp;
  let as: oauth.AuthorizationServer;

  beforeAll(async () => {
    app = await startTestApp({});
    const issuer = new URL(app.baseUrl);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...INSECURE }));
  });
  afterAll(() => app?.close());

  /** The authorization request oauth4webapi's values make (PKCE S256, state, nonce), signed in through the login page; the callback URL. */
  async function authorize(client: oauth.Client, scope: string) {
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const [state, nonce] = [oauth.generateRandomState(), oauth.generateRandomNonce()];
    const url = new URL(as.authorization_endpoint!);
    const params = { response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, scope, state, nonce, code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier), code_challenge_method: 'S256' };
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    const user = await createUser(app);
    const browser = new FormBrowser();
    const login = await browser.submit(await browser.get(url.href), app.baseUrl, user);
    expect(login.status).toBe(302);
    return { callback: new URL(login.headers.get('location')!), codeVerifier, state, nonce, user };
  }

  it('discovers the provider (OpenID Connect Discovery, the issuer checked) with what the flow needs', () => {
    expect(as).toMatchObject({
      issuer: app.baseUrl,
      authorization_endpoint: `${app.baseUrl}/sso/authorize`,
      token_endpoint: `${app.baseUrl}/sso/token`,
      userinfo_endpoint: `${app.baseUrl}/sso/userinfo`,
      jwks_uri: `${app.baseUrl}/.well-known/jwks.json`,
      authorization_response_iss_parameter_supported: true,
    });
    expect(as.code_challenge_methods_supported).toContain('S256');
    expect(as.id_token_signing_alg_values_supported).toContain('RS256');
  });

  it('signs in with the code flow, PKCE and nonce (client_secret_basic): a valid, signed ID token, userinfo for its sub, and a refresh with a new ID token', async () => {
    const registered = await createClient(app, { redirectPatterns: [REDIRECT] });
    const client: oauth.Client = { client_id: registered.id };
    const auth = oauth.ClientSecretBasic(registered.secret);
    const { callback, codeVerifier, state, nonce, user } = await authorize(client, 'openid profile');

    // The authorization response: state and (RFC 9207, advertised) the issuer.
    const params = oauth.validateAuthResponse(as, client, callback, state);
    const response = await oauth.authorizationCodeGrantRequest(as, client, auth, params, REDIRECT, codeVerifier, INSECURE);
    // The ID token: iss, aud, exp, iat, nonce, at_hash and the RS256 algorithm, checked by oauth4webapi.
    const result = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: nonce, requireIdToken: true });
    await oauth.validateApplicationLevelSignature(as, response, INSECURE);
    const claims = oauth.getValidatedIdTokenClaims(result)!;
    expect(claims).toMatchObject({ iss: app.baseUrl, aud: registered.id, sub: await userId(app, user), nonce, preferred_username: user.username });
    expect(claims.auth_time).toEqual(expect.any(Number));
    expect(result.token_type).toBe('bearer');

    const info = await oauth.processUserInfoResponse(as, client, claims.sub, await oauth.userInfoRequest(as, client, result.access_token, INSECURE));
    expect(info).toMatchObject({ sub: claims.sub, preferred_username: user.username, name: user.username });

    const refreshResponse = await oauth.refreshTokenGrantRequest(as, client, auth, result.refresh_token!, INSECURE);
    const refreshed = await oauth.processRefreshTokenResponse(as, client, refreshResponse);
    await oauth.validateApplicationLevelSignature(as, refreshResponse, INSECURE);
    const again = oauth.getValidatedIdTokenClaims(refreshed)!;
    expect(again).toMatchObject({ iss: claims.iss, sub: claims.sub, aud: claims.aud, auth_time: claims.auth_time });
    expect(again).not.toHaveProperty('nonce');
    expect(refreshed.refresh_token).not.toBe(result.refresh_token);
  });

  it('signs in a public client (token_endpoint_auth_method none, PKCE alone) and refuses a code redeemed with another verifier', async () => {
    const registered = await createPublicClient(app, { redirectPatterns: [REDIRECT] });
    const client: oauth.Client = { client_id: registered.id, token_endpoint_auth_method: 'none' };
    const { callback, state, nonce } = await authorize(client, 'openid');
    const params = oauth.validateAuthResponse(as, client, callback, state);

    const wrong = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, oauth.generateRandomCodeVerifier(), INSECURE);
    await expect(oauth.processAuthorizationCodeResponse(as, client, wrong, { expectedNonce: nonce })).rejects.toMatchObject({ code: oauth.RESPONSE_BODY_ERROR, error: 'invalid_grant' });

    // A failed exchange spends the code (RFC 9700 §4.2.4): a new sign-in, redeemed right.
    const next = await authorize(client, 'openid');
    const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), oauth.validateAuthResponse(as, client, next.callback, next.state), REDIRECT, next.codeVerifier, INSECURE);
    const result = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: next.nonce, requireIdToken: true });
    expect(oauth.getValidatedIdTokenClaims(result)).toMatchObject({ aud: registered.id, nonce: next.nonce });
  });

  it('catches an ID token for another nonce: the library’s check is live', async () => {
    const registered = await createClient(app, { redirectPatterns: [REDIRECT] });
    const client: oauth.Client = { client_id: registered.id };
    const { callback, codeVerifier, state } = await authorize(client, 'openid');
    const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.ClientSecretPost(registered.secret), oauth.validateAuthResponse(as, client, callback, state), REDIRECT, codeVerifier, INSECURE);
    await expect(oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: oauth.generateRandomNonce() })).rejects.toMatchObject({ code: oauth.JWT_CLAIM_COMPARISON });
  });
});
