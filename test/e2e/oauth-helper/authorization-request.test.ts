import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { exchangeCode, LOOPBACK_PATTERN, pkcePair, refresh, userId } from '../../factories/token-flow.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// The standard authorization request (RFC 6749 §4.1, OpenID Connect Core §3.1.2) at /sso/authorize,
// beside the helper's link: a client library's request signs a user in on the same login page and
// gets its code at its redirect_uri with its state and the issuer (RFC 9207). What only the user
// may learn (a bad client or redirect_uri) is a page; anything else goes back to the client.

const REDIRECT = 'http://127.0.0.1:8765/callback';

/** Refusals the client is told at its redirect_uri: what is wrong in the request, and the error it gets. */
const REFUSALS: { name: string; overrides: Record<string, string | undefined>; error: string }[] = [
  { name: 'a missing response_type (oidcc-response-type-missing)', overrides: { response_type: undefined }, error: 'invalid_request' },
  { name: 'response_type=token', overrides: { response_type: 'token' }, error: 'unsupported_response_type' },
  { name: 'no PKCE challenge', overrides: { code_challenge: undefined, code_challenge_method: undefined }, error: 'invalid_request' },
  { name: 'the plain PKCE method', overrides: { code_challenge_method: 'plain' }, error: 'invalid_request' },
  { name: 'a challenge no S256 digest can be', overrides: { code_challenge: 'a'.repeat(44) }, error: 'invalid_request' },
  { name: 'an unknown prompt', overrides: { prompt: 'sometimes' }, error: 'invalid_request' },
  { name: 'prompt=none with another', overrides: { prompt: 'none login' }, error: 'invalid_request' },
  { name: 'a max_age that is not seconds', overrides: { max_age: 'soon' }, error: 'invalid_request' },
  { name: 'a request object', overrides: { request: 'eyJhbGciOiJub25lIn0.e30.' }, error: 'request_not_supported' },
  { name: 'a request_uri', overrides: { request_uri: 'https://client.example/request.jwt' }, error: 'request_uri_not_supported' },
  { name: 'response_mode=fragment', overrides: { response_mode: 'fragment' }, error: 'invalid_request' },
  { name: 'prompt=none while no one is signed in (oidcc-prompt-none-not-logged-in)', overrides: { prompt: 'none' }, error: 'login_required' },
];

describe('the standard authorization request', () => {
  let app: TestApp;
  let client: TestClient;
  let challenge: string;
  let verifier: string;

  beforeAll(async () => {
    app = await startTestApp({});
    client = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
    ({ challenge, verifier } = pkcePair());
  });
  afterAll(() => app?.close());

  const authorizeUrl = (params: Record<string, string | undefined>) => {
    const url = new URL('/sso/authorize', app.baseUrl);
    for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
    return url.href;
  };
  const standard = (overrides: Record<string, string | undefined> = {}) =>
    authorizeUrl({ response_type: 'code', client_id: client.id, redirect_uri: REDIRECT, scope: 'openid profile', state: 'client-state-1', nonce: 'n-0S6_WzA2Mj', code_challenge: challenge, code_challenge_method: 'S256', ...overrides });
  /** The redirect's query, or the page's status when there is no redirect. */
  const answerTo = async (url: string) => {
    const response = await fetch(url, { redirect: 'manual' });
    const text = await response.text();
    const location = response.headers.get('location');
    return { status: response.status, text, at: location ? new URL(location) : undefined, params: location ? Object.fromEntries(new URL(location).searchParams) : undefined };
  };
  const stored = async () => (await query<{ count: number }>(app.databaseUrl, 'SELECT (SELECT count(*) FROM authorizations) + (SELECT count(*) FROM authorization_codes) AS count'))[0].count;

  it('signs a user in on the login page and sends the code to the redirect_uri with the client’s state and the issuer; the code needs the same redirect_uri and verifier', async () => {
    const user = await createUser(app);
    const login = await signIn(standard(), user);
    expect(login.status).toBe(302);
    const back = new URL(login.headers.get('location')!);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(Object.keys(Object.fromEntries(back.searchParams)).sort()).toEqual(['code', 'iss', 'state']);
    expect(back.searchParams.get('state')).toBe('client-state-1');
    expect(back.searchParams.get('iss')).toBe(app.baseUrl);
    const code = back.searchParams.get('code')!;

    const withoutRedirect = await exchangeCode(app, client, code, { code_verifier: verifier });
    expect(withoutRedirect).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'redirect_uri is required: the authorization request had one' } });
    // The failed exchange spent it, as any failed check does.
    const again = await exchangeCode(app, client, code, { code_verifier: verifier, redirect_uri: REDIRECT });
    expect(again).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('works with openid-client as the relying party: its authorization URL, PKCE and state, the RFC 9207 check and the code grant', async () => {
    const user = await createUser(app);
    const config = await oidc.discovery(new URL(app.baseUrl), client.id, undefined, oidc.ClientSecretPost(client.secret), { algorithm: 'oauth2', execute: [oidc.allowInsecureRequests] });
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'profile',
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
    const login = await signIn(url.href, user);
    expect(login.status).toBe(302);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(login.headers.get('location')!), { pkceCodeVerifier: codeVerifier, expectedState: state });
    expect(tokens).toMatchObject({ token_type: 'bearer', scope: 'profile' });
    expect(tokens.refresh_token).toEqual(expect.any(String));
  });

  it('shows an error page, never a redirect, for an unknown or disabled client and for a redirect_uri the client did not register; nothing is stored', async () => {
    const disabled = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
    await app.get(ClientsService).setEnabled(disabled.id, false);
    const before = await stored();
    const lanDevice = await createClient(app, { redirectPatterns: ['http://10.0.0.0/8:*/callback'] });
    const cases = [
      // A private network range is the helper's (its link names the device's host): an app's request gets the exact URL or loopback only.
      standard({ client_id: lanDevice.id, redirect_uri: 'http://10.1.2.3:9999/callback' }),
      standard({ client_id: 'no-such-client' }),
      standard({ client_id: disabled.id }),
      standard({ redirect_uri: 'https://attacker.example/callback' }),
      standard({ redirect_uri: 'http://127.0.0.1:8765/callback/../elsewhere' }),
      standard({ redirect_uri: 'http://127.0.0.1:8765/callback#fragment' }),
    ];
    for (const url of cases) {
      const answer = await answerTo(url);
      expect(answer.status, url).toBe(400);
      expect(answer.at, url).toBeUndefined();
      expect(answer.text).toContain('This sign-in request does not work');
    }
    expect(await stored()).toBe(before);
  });

  it('shows the error page, not the login page, for a redirect_uri with user information in a registered loopback range', async () => {
    const native = await createClient(app, { redirectPatterns: ['http://127.0.0.0/8:*/native'] });
    const before = await stored();
    for (const redirectUri of ['http://evil.example@127.0.0.1:9999/native', 'http://user:pw@127.0.0.1:9999/native', 'http://@127.0.0.1:9999/native']) {
      const answer = await answerTo(standard({ client_id: native.id, redirect_uri: redirectUri }));
      expect(answer.status, redirectUri).toBe(400);
      expect(answer.at, redirectUri).toBeUndefined();
      expect(answer.text).toContain('This sign-in request does not work');
      expect(answer.text).not.toContain('name="password"');
    }
    expect(await stored()).toBe(before);
    // The same address without user information is the client's.
    expect((await answerTo(standard({ client_id: native.id, redirect_uri: 'http://127.0.0.1:9999/native' }))).status).toBe(200);
  });

  it.each(REFUSALS)('sends $name back to the client as $error, with its state and the issuer, storing nothing', async ({ overrides, error }) => {
    const before = await stored();
    const answer = await answerTo(standard(overrides));
    expect(answer.status).toBe(302);
    expect(`${answer.at!.origin}${answer.at!.pathname}`).toBe(REDIRECT);
    expect(answer.params).toMatchObject({ error, state: 'client-state-1', iss: app.baseUrl });
    expect(answer.params!.error_description).toEqual(expect.any(String));
    expect(await stored()).toBe(before);
  });

  it('ignores parameters it does not know and scopes it does not understand (oidcc-ensure-request-with-unknown-parameter-succeeds)', async () => {
    const user = await createUser(app);
    const login = await signIn(standard({ extra: 'foobar', display: 'page', ui_locales: 'se', claims_locales: 'se', acr_values: '1 2', scope: 'openid email weird-scope' }), user);
    expect(login.status).toBe(302);
    const code = new URL(login.headers.get('location')!).searchParams.get('code')!;
    const tokens = await exchangeCode(app, client, code, { code_verifier: verifier, redirect_uri: REDIRECT });
    expect(tokens).toMatchObject({ status: 200, body: { scope: 'openid email' } });
  });

  it('grants the OpenID scopes to every client: userinfo answers its token, and a refresh keeps them', async () => {
    const user = await createUser(app);
    const login = await signIn(standard({ scope: 'openid profile' }), user);
    const code = new URL(login.headers.get('location')!).searchParams.get('code')!;
    const tokens = await exchangeCode(app, client, code, { code_verifier: verifier, redirect_uri: REDIRECT });
    expect(tokens).toMatchObject({ status: 200, body: { scope: 'openid profile' } });
    const userinfo = await fetch(`${app.baseUrl}/sso/userinfo`, { headers: { authorization: `Bearer ${tokens.body.access_token}` } });
    expect(userinfo.status).toBe(200);
    expect(await userinfo.json()).toMatchObject({ sub: await userId(app, user), preferred_username: user.username });
    const refreshed = await refresh(app, client, String(tokens.body.refresh_token));
    expect(refreshed).toMatchObject({ status: 200, body: { scope: 'openid profile' } });
  });

  it('fills the username from login_hint', async () => {
    const page = await fetch(standard({ login_hint: 'alice.hint' }));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('value="alice.hint"');
  });
});
