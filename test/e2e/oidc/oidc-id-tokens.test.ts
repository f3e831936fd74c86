import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { exchangeCode, LOOPBACK_PATTERN, refresh, userId } from '../../factories/token-flow.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { query } from '../../setup/database.js';
import { FormBrowser } from '../../setup/form-browser.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// ID tokens (OpenID Connect Core §2, §3.1.3): beside the access token when the grant's scope has
// openid, checked here by openid-client 6 after OpenID Connect discovery, as any relying party would.

const REDIRECT = 'http://127.0.0.1:8765/callback';

describe('ID tokens', () => {
  let app: TestApp;
  let client: TestClient;
  let config: oidc.Configuration;

  beforeAll(async () => {
    app = await startTestApp({});
    client = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
    config = await oidc.discovery(new URL(app.baseUrl), client.id, undefined, oidc.ClientSecretBasic(client.secret), { execute: [oidc.allowInsecureRequests] });
  });
  afterAll(() => app?.close());

  /** A standard sign-in through openid-client's own authorization URL (PKCE, state, nonce); its token response, checked by openid-client. */
  async function signInWithOpenIdClient(scope: string) {
    const user = await createUser(app);
    const verifier = oidc.randomPKCECodeVerifier();
    const [state, nonce] = [oidc.randomState(), oidc.randomNonce()];
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope, state, nonce, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const login = await signIn(url.href, user);
    expect(login.status).toBe(302);
    const before = Math.floor(Date.now() / 1000);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(login.headers.get('location')!), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true });
    return { user, tokens, nonce, before };
  }

  it('gives openid-client a valid ID token at the code exchange: iss, sub, aud, exp, iat, auth_time, nonce, at_hash, sid and the profile claims', async () => {
    const { user, tokens, nonce, before } = await signInWithOpenIdClient('openid profile');
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: app.baseUrl, sub: await userId(app, user), aud: client.id, nonce, preferred_username: user.username, name: user.username });
    expect(claims.auth_time).toBeGreaterThanOrEqual(before - 5);
    expect(claims.auth_time).toBeLessThanOrEqual(claims.iat);
    expect(claims.exp - claims.iat).toBe(3600);
    expect(claims.sid).toEqual(expect.any(String));
    expect(claims.at_hash).toBe(createHash('sha256').update(tokens.access_token).digest().subarray(0, 16).toString('base64url'));
    expect(decodeProtectedHeader(tokens.id_token!)).toMatchObject({ typ: 'JWT', alg: 'RS256' });
    // The JWKS verifies it as any library would.
    await expect(jwtVerify(tokens.id_token!, createRemoteJWKSet(new URL(`${app.baseUrl}/.well-known/jwks.json`)), { issuer: app.baseUrl, audience: client.id })).resolves.toBeDefined();
    // Userinfo agrees on the subject (openid-client checks it).
    await expect(oidc.fetchUserInfo(config, tokens.access_token, claims.sub)).resolves.toMatchObject({ preferred_username: user.username });
  });

  it('gives a refresh a new ID token without nonce, with the same subject, auth_time and sid', async () => {
    const { tokens } = await signInWithOpenIdClient('openid');
    const first = tokens.claims()!;
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    const again = refreshed.claims()!;
    expect(again).toMatchObject({ iss: first.iss, sub: first.sub, aud: first.aud, auth_time: first.auth_time, sid: first.sid });
    expect(again).not.toHaveProperty('nonce');
    expect(again).not.toHaveProperty('preferred_username');
  });

  it('signs with ES256 for a client registered with --id-token-alg ES256, and openid-client verifies it', async () => {
    const es256 = await app.get(ClientsService).create({ name: `es256-${Date.now()}`, redirectPatterns: [LOOPBACK_PATTERN], idTokenSignedResponseAlg: 'ES256' });
    const esConfig = await oidc.discovery(new URL(app.baseUrl), es256.client_id, { id_token_signed_response_alg: 'ES256' }, oidc.ClientSecretBasic(es256.client_secret!), {
      execute: [oidc.allowInsecureRequests],
    });
    const user = await createUser(app);
    const verifier = oidc.randomPKCECodeVerifier();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(esConfig, { redirect_uri: REDIRECT, scope: 'openid', nonce, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const login = await signIn(url.href, user);
    const tokens = await oidc.authorizationCodeGrant(esConfig, new URL(login.headers.get('location')!), { pkceCodeVerifier: verifier, expectedNonce: nonce, idTokenExpected: true });
    expect(decodeProtectedHeader(tokens.id_token!).alg).toBe('ES256');
    expect(tokens.claims()!.aud).toBe(es256.client_id);
  });

  it('gives no ID token without openid in the scope', async () => {
    const user = await createUser(app);
    const { challenge, verifier } = { challenge: oidc.calculatePKCECodeChallenge('v'.repeat(43)), verifier: 'v'.repeat(43) };
    const url = `${app.baseUrl}/sso/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.id, redirect_uri: REDIRECT, scope: 'profile', code_challenge: await challenge, code_challenge_method: 'S256' })}`;
    const login = await signIn(url, user);
    const code = new URL(login.headers.get('location')!).searchParams.get('code')!;
    const tokens = await exchangeCode(app, client, code, { code_verifier: verifier, redirect_uri: REDIRECT });
    expect(tokens.status).toBe(200);
    expect(tokens.body).not.toHaveProperty('id_token');
  });

  it("gives the helper's code an ID token when its token request asks for openid, and keeps the seed's answer without", async () => {
    const user = await createUser(app);
    const link = await issueState(app, client.id, { redirect_url: REDIRECT });
    const code = new URL((await signIn(link.authorize_url, user)).headers.get('location')!).searchParams.get('code')!;
    const tokens = await exchangeCode(app, client, code, { scope: 'openid' });
    expect(tokens).toMatchObject({ status: 200, body: { scope: 'openid', id_token: expect.any(String) } });
    const { payload } = await jwtVerify(String(tokens.body.id_token), createRemoteJWKSet(new URL(`${app.baseUrl}/.well-known/jwks.json`)), { issuer: app.baseUrl, audience: client.id });
    expect(payload).toMatchObject({ sub: await userId(app, user) });
    expect(payload).not.toHaveProperty('nonce');

    const seed = await exchangeCode(app, client, new URL((await signIn((await issueState(app, client.id, { redirect_url: REDIRECT })).authorize_url, user)).headers.get('location')!).searchParams.get('code')!);
    expect(Object.keys(seed.body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
    expect(seed.body.scope).toBeNull();
  });

  it('gives the helper’s code approved with “Continue as USER” the auth_time and sid of the session’s sign-in, by redirect and by polling', async () => {
    const user = await createUser(app);
    const browser = new FormBrowser();
    /** The helper's code exchanged with openid: its ID token's claims. */
    const idToken = async (code: string) => {
      const tokens = await exchangeCode(app, client, code, { scope: 'openid' });
      expect(tokens.status).toBe(200);
      return (await jwtVerify(String(tokens.body.id_token), createRemoteJWKSet(new URL(`${app.baseUrl}/.well-known/jwks.json`)), { issuer: app.baseUrl, audience: client.id })).payload;
    };

    // The sign-in: a password on the first link, which begins the browser's session.
    const first = await issueState(app, client.id, { redirect_url: REDIRECT });
    const login = await browser.submit(await browser.get(first.authorize_url), app.baseUrl, user);
    expect(login.status).toBe(302);
    const signedIn = await idToken(new URL(login.headers.get('location')!).searchParams.get('code')!);
    expect(signedIn.sid).toEqual(expect.any(String));
    // auth_time is in whole seconds: later codes are issued in a later one.
    await sleep(1100);

    const redirected = await issueState(app, client.id, { redirect_url: REDIRECT });
    const page = await browser.get(redirected.authorize_url);
    expect(await page.clone().text()).toContain(`Continue as ${user.username}</button>`);
    const continued = await browser.submit(page, app.baseUrl, { session: 'continue' });
    expect(continued.status).toBe(302);
    const viaRedirect = await idToken(new URL(continued.headers.get('location')!).searchParams.get('code')!);
    expect(viaRedirect).toMatchObject({ sub: signedIn.sub, auth_time: signedIn.auth_time, sid: signedIn.sid });
    expect(viaRedirect.iat).toBeGreaterThan(signedIn.auth_time as number);

    const polled = await issueState(app, client.id);
    expect((await browser.submit(await browser.get(polled.authorize_url), app.baseUrl, { session: 'continue' })).status).toBe(200);
    const poll = await fetch(polled.code_url);
    expect(poll.status).toBe(200);
    const viaPolling = await idToken(((await poll.json()) as { code: string }).code);
    expect(viaPolling).toMatchObject({ sub: signedIn.sub, auth_time: signedIn.auth_time, sid: signedIn.sid });
  });
  it('spends neither the code nor the refresh token when what the ID token says cannot be read: the 500 leaves them usable, and the retry gets its tokens', async () => {
    const user = await createUser(app);
    const link = await issueState(app, client.id, { redirect_url: REDIRECT });
    const code = new URL((await signIn(link.authorize_url, user)).headers.get('location')!).searchParams.get('code')!;
    /** Runs `request` while the user's profile, which the ID token's claims come from, cannot be read. */
    const withProfileUnreadable = async <T>(request: () => Promise<T>): Promise<T> => {
      await query(app.databaseUrl, 'ALTER TABLE portal_users RENAME COLUMN profile TO profile_unreadable');
      try {
        return await request();
      } finally {
        await query(app.databaseUrl, 'ALTER TABLE portal_users RENAME COLUMN profile_unreadable TO profile');
      }
    };
    const failed = { status: 500, body: { error: 'server_error' } };

    expect(await withProfileUnreadable(() => exchangeCode(app, client, code, { scope: 'openid' }))).toMatchObject(failed);
    const exchanged = await exchangeCode(app, client, code, { scope: 'openid' });
    expect(exchanged).toMatchObject({ status: 200, body: { scope: 'openid', id_token: expect.any(String) } });

    const refreshToken = String(exchanged.body.refresh_token);
    expect(await withProfileUnreadable(() => refresh(app, client, refreshToken))).toMatchObject(failed);
    const refreshed = await refresh(app, client, refreshToken);
    expect(refreshed).toMatchObject({ status: 200, body: { scope: 'openid', id_token: expect.any(String) } });
    expect(refreshed.body.refresh_token).not.toBe(refreshToken);
  });
});
