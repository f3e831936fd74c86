import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { createUser } from '../../factories/oauth.factory.js';
import { exchangeCode, LOOPBACK_PATTERN, pkcePair } from '../../factories/token-flow.factory.js';
import { FormBrowser } from '../../setup/form-browser.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// RP-Initiated Logout 1.0 at /sso/logout: the browser's session ends (at once for an ID token of
// its user, else on the user's own click), then the browser goes to the address the client
// registered, with its state, or sees "You're signed out"; never to an address it did not register.

const REDIRECT = 'http://127.0.0.1:8765/callback';
const AFTER_LOGOUT = 'https://app.example/signed-out';

describe('logout (RP-Initiated Logout 1.0)', () => {
  let app: TestApp;
  let client: { id: string; secret: string };
  const { challenge, verifier } = pkcePair();

  beforeAll(async () => {
    app = await startTestApp({});
    const created = await app.get(ClientsService).create({ name: `logout-${Date.now()}`, redirectPatterns: [LOOPBACK_PATTERN], postLogoutRedirectUris: [AFTER_LOGOUT] });
    client = { id: created.client_id, secret: created.client_secret! };
  });
  afterAll(() => app?.close());

  const standard = (params: Record<string, string> = {}) =>
    `${app.baseUrl}/sso/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.id, redirect_uri: REDIRECT, scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', ...params })}`;
  const logoutUrl = (params: Record<string, string>) => `${app.baseUrl}/sso/logout?${new URLSearchParams(params)}`;

  /** A browser signed in through a standard request, and the ID token its client got. */
  async function signedIn() {
    const browser = new FormBrowser();
    const login = await browser.submit(await browser.get(standard()), app.baseUrl, await createUser(app));
    const code = new URL(login.headers.get('location')!).searchParams.get('code')!;
    const tokens = await exchangeCode(app, client, code, { code_verifier: verifier, redirect_uri: REDIRECT });
    expect(tokens.body.id_token).toEqual(expect.any(String));
    return { browser, idToken: String(tokens.body.id_token) };
  }
  /** Whether the browser's session still answers a standard request without a page. */
  const stillSignedIn = async (browser: FormBrowser) => (await browser.get(standard({ prompt: 'none' }))).headers.get('location')!.includes('code=');

  it('ends the session at once for an id_token_hint of its user and sends the browser to the registered address with its state', async () => {
    const { browser, idToken } = await signedIn();
    expect(await stillSignedIn(browser)).toBe(true);
    const out = await browser.get(logoutUrl({ id_token_hint: idToken, post_logout_redirect_uri: AFTER_LOGOUT, state: 'bye-1' }));
    expect(out.status).toBe(302);
    expect(out.headers.get('location')).toBe(`${AFTER_LOGOUT}?state=bye-1`);
    expect(out.headers.getSetCookie().some((line) => line.startsWith('vc_session=;'))).toBe(true);
    expect(await stillSignedIn(browser)).toBe(false);
  });

  it('ends the session on the server even when the browser keeps sending the old cookie', async () => {
    const { browser, idToken } = await signedIn();
    const cookie = browser.cookie('vc_session')!;
    await browser.get(logoutUrl({ id_token_hint: idToken }));
    const replay = await fetch(standard({ prompt: 'none' }), { redirect: 'manual', headers: { cookie: `vc_session=${cookie}` } });
    expect(new URL(replay.headers.get('location')!).searchParams.get('error')).toBe('login_required');
  });

  it('asks "Sign out?" without an id_token_hint, and signs out only on the user’s click (CSRF-checked)', async () => {
    const { browser } = await signedIn();
    const page = await browser.get(logoutUrl({ client_id: client.id, post_logout_redirect_uri: AFTER_LOGOUT, state: 'bye-2' }));
    expect(page.status).toBe(200);
    const html = await page.clone().text();
    expect(html).toContain('<h1>Sign out?</h1>');
    expect(await stillSignedIn(browser)).toBe(true);

    const forged = await browser.post(`${app.baseUrl}/sso/logout`, { client_id: client.id, csrf_token: 'forged' });
    expect(forged.status).toBe(403);
    expect(await stillSignedIn(browser)).toBe(true);

    const confirmed = await browser.submit(page, app.baseUrl, {}, '/sso/logout');
    expect(confirmed.status).toBe(302);
    expect(confirmed.headers.get('location')).toBe(`${AFTER_LOGOUT}?state=bye-2`);
    expect(await stillSignedIn(browser)).toBe(false);
  });

  it('never redirects to an address the client did not register, nor for a hint it did not issue: a 400 page, and the session stays', async () => {
    const { browser, idToken } = await signedIn();
    const [header, payload] = idToken.split('.');
    for (const params of <Record<string, string>[]>[
      { id_token_hint: idToken, post_logout_redirect_uri: 'https://attacker.example/' },
      { id_token_hint: idToken, post_logout_redirect_uri: `${AFTER_LOGOUT}/..` },
      { post_logout_redirect_uri: AFTER_LOGOUT },
      { client_id: 'no-such-client', post_logout_redirect_uri: AFTER_LOGOUT },
      { id_token_hint: `${header}.${payload}.${'A'.repeat(86)}` },
      { id_token_hint: 'not-a-jwt' },
      { id_token_hint: idToken, client_id: 'another-client' },
    ]) {
      const answer = await browser.get(logoutUrl(params));
      expect(answer.status, JSON.stringify(params)).toBe(400);
      expect(answer.headers.get('location')).toBeNull();
    }
    expect(await stillSignedIn(browser)).toBe(true);
  });

  it('without a session: to the registered address, or "You\'re signed out"', async () => {
    const stranger = new FormBrowser();
    const back = await stranger.get(logoutUrl({ client_id: client.id, post_logout_redirect_uri: AFTER_LOGOUT, state: 's' }));
    expect(back.headers.get('location')).toBe(`${AFTER_LOGOUT}?state=s`);
    const page = await stranger.get(logoutUrl({}));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<h1>You&#39;re signed out</h1>');
  });
});
