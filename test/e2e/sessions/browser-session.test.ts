import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignOutsRepository } from '../../../src/grants/sign-outs.repository.js';
import { UsersService } from '../../../src/users/users.service.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { exchangeCode, LOOPBACK_PATTERN, pkcePair, userId } from '../../factories/token-flow.factory.js';
import { FormBrowser } from '../../setup/form-browser.js';
import { type ForgingProvider, startForgingProvider } from '../../setup/upstream/forging-provider.js';
import { createSignInClient, newKek, registerProvider } from '../../factories/upstream.factory.js';
import { BrowserSessionsRepository } from '../../../src/sessions/browser-sessions.repository.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// Single sign-on: a sign-in at the service leaves a session in the browser (cookie vc_session);
// within it a standard request is answered without a page, unless it asks for one (prompt=login,
// an exceeded max_age, prompt=consent), and the helper's link asks "Continue as USER". Every
// sign-out of the user ends it.

const REDIRECT = 'http://127.0.0.1:8765/callback';

/** Every sign-out of a user that ends their sessions. */
const SIGN_OUTS = [
  ['user:set-password', (app: TestApp, user: { username: string }) => app.get(UsersService).setPassword(user.username, 'a new password, long enough')],
  ['user:disable', (app: TestApp, user: { username: string }) => app.get(UsersService).disable(user.username)],
  ['grants:revoke --user', async (app: TestApp, user: { username: string; password: string }) => app.get(SignOutsRepository).signOutNow({ userId: await userId(app, user) })],
] as const;

describe('the browser session (single sign-on)', () => {
  let app: TestApp;
  let client: TestClient;
  const { verifier, challenge } = pkcePair();

  let forge: ForgingProvider;

  beforeAll(async () => {
    [app, forge] = await Promise.all([startTestApp({ KEYS_ENCRYPTION_KEY: newKek() }), startForgingProvider()]);
    client = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
    await registerProvider(app, forge, 'forge', 'Forge SSO');
  });
  afterAll(async () => {
    await forge?.close();
    await app?.close();
  });

  const standard = (params: Record<string, string> = {}) =>
    `${app.baseUrl}/sso/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.id, redirect_uri: REDIRECT, scope: 'openid', state: 's1', code_challenge: challenge, code_challenge_method: 'S256', ...params })}`;
  const redirectParams = (response: Response) => Object.fromEntries(new URL(response.headers.get('location')!).searchParams);

  /** A browser that signed in with a password through a standard request. */
  async function signedIn(user: { username: string; password: string }): Promise<FormBrowser> {
    const browser = new FormBrowser();
    const page = await browser.get(standard());
    expect(page.status).toBe(200);
    const login = await browser.submit(page, app.baseUrl, user);
    expect(login.status).toBe(302);
    expect(redirectParams(login)).toHaveProperty('code');
    expect(browser.has('vc_session')).toBe(true);
    return browser;
  }

  it('leaves an HttpOnly, SameSite=Lax session cookie after a password sign-in, and answers the next request at once with a code (SSO)', async () => {
    const browser = new FormBrowser();
    const page = await browser.get(standard());
    const login = await browser.submit(page, app.baseUrl, await createUser(app));
    const cookie = login.headers.getSetCookie().find((line) => line.startsWith('vc_session='))!;
    expect(cookie).toMatch(/; HttpOnly/i);
    expect(cookie).toMatch(/; SameSite=Lax/i);
    expect(cookie).toMatch(/; Path=\//i);

    const again = await browser.get(standard({ state: 's2' }));
    expect(again.status).toBe(302);
    expect(redirectParams(again)).toMatchObject({ code: expect.any(String), state: 's2', iss: app.baseUrl });
  });

  it('answers prompt=none with a code within a session (oidcc-prompt-none-logged-in), and login_required without one', async () => {
    const browser = await signedIn(await createUser(app));
    const silent = await browser.get(standard({ prompt: 'none' }));
    expect(silent.status).toBe(302);
    expect(redirectParams(silent)).toHaveProperty('code');
    const stranger = await new FormBrowser().get(standard({ prompt: 'none' }));
    expect(redirectParams(stranger)).toMatchObject({ error: 'login_required', state: 's1' });
  });

  it('asks for the password again for prompt=login (oidcc-prompt-login) and past max_age (oidcc-max-age-1), not within it (oidcc-max-age-10000)', async () => {
    const browser = await signedIn(await createUser(app));
    const relogin = await browser.get(standard({ prompt: 'login' }));
    expect(relogin.status).toBe(200);
    expect(await relogin.text()).toContain('name="password"');
    expect((await browser.get(standard({ max_age: '10000' }))).status).toBe(302);
    await sleep(1100);
    const tooOld = await browser.get(standard({ max_age: '1' }));
    expect(tooOld.status).toBe(200);
    expect(await tooOld.text()).toContain('name="password"');
    // prompt=none cannot ask: login_required.
    expect(redirectParams(await browser.get(standard({ prompt: 'none', max_age: '0' })))).toMatchObject({ error: 'login_required' });
  });

  /** An ID token of `user` for `forClient`: a sign-in in a browser of its own, the code exchanged. */
  async function idTokenOf(user: { username: string; password: string }, forClient = client): Promise<string> {
    const browser = new FormBrowser();
    const login = await browser.submit(await browser.get(standard({ client_id: forClient.id })), app.baseUrl, user);
    const tokens = await exchangeCode(app, forClient, redirectParams(login).code, { code_verifier: verifier, redirect_uri: REDIRECT });
    expect(tokens.status).toBe(200);
    return tokens.body.id_token as string;
  }

  it('answers a request whose id_token_hint names another user than the session’s only after that user signs in: login_required for prompt=none, the login page otherwise', async () => {
    const [alice, bob] = [await createUser(app), await createUser(app)];
    const aliceHint = await idTokenOf(alice);
    const browser = await signedIn(bob);
    // Bob's session does not answer for Alice, silently or not.
    expect(redirectParams(await browser.get(standard({ prompt: 'none', id_token_hint: aliceHint, state: 'h1' })))).toMatchObject({ error: 'login_required', state: 'h1', iss: app.baseUrl });
    const page = await browser.get(standard({ id_token_hint: aliceHint }));
    expect(page.status).toBe(200);
    expect(await page.clone().text()).toContain('name="password"');
    // Bob signing in again is not Alice: refused, no code.
    const asBob = await browser.submit(page, app.baseUrl, bob);
    expect(redirectParams(asBob)).toMatchObject({ error: 'login_required', state: 's1' });
    expect(redirectParams(asBob)).not.toHaveProperty('code');
    const asAlice = await browser.submit(await browser.get(standard({ id_token_hint: aliceHint })), app.baseUrl, alice);
    expect(redirectParams(asAlice)).toMatchObject({ code: expect.any(String), state: 's1' });
    // Now the session is Alice's: her hint is answered at once.
    expect(redirectParams(await browser.get(standard({ prompt: 'none', id_token_hint: aliceHint })))).toHaveProperty('code');
  });

  it('refuses an id_token_hint it did not issue to this client with invalid_request, and no code', async () => {
    const user = await createUser(app);
    const browser = await signedIn(user);
    const other = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
    const [header, payload] = (await idTokenOf(user)).split('.');
    for (const hint of [await idTokenOf(user, other), `${header}.${payload}.${'A'.repeat(86)}`, 'not-a-jwt']) {
      const answer = await browser.get(standard({ prompt: 'none', id_token_hint: hint, state: 'bad-hint' }));
      expect(answer.status).toBe(302);
      expect(redirectParams(answer)).toMatchObject({ error: 'invalid_request', state: 'bad-hint', iss: app.baseUrl });
      expect(redirectParams(answer)).not.toHaveProperty('code');
    }
  });

  it('shows the helper’s link "Continue as USER" with "Use another account", never answering it silently', async () => {
    const user = await createUser(app);
    const browser = await signedIn(user);
    const helperClient = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
    const link = await issueState(app, helperClient.id, { redirect_url: REDIRECT });

    const page = await browser.get(link.authorize_url);
    expect(page.status).toBe(200);
    const html = await page.clone().text();
    expect(html).toContain(`You are signed in as <strong>${user.username}</strong>.`);
    // As the login form does, it names the device the sign-in goes to.
    expect(html).toContain('Your sign-in is sent to the device at <strong>127.0.0.1:8765</strong>. Continue only if that is yours.');
    expect(html).toContain(`Continue as ${user.username}</button>`);
    expect(html).toContain('Use another account</button>');

    const another = await browser.submit(page.clone(), app.baseUrl, { session: 'another' });
    expect(another.status).toBe(200);
    expect(await another.text()).toContain('name="password"');

    const continued = await browser.submit(await browser.get(link.authorize_url), app.baseUrl, { session: 'continue' });
    expect(continued.status).toBe(302);
    expect(Object.keys(redirectParams(continued)).sort()).toEqual(['code', 'iss', 'state']);
  });

  it('never lets a session into a client that does not sign its user in that way: to the provider instead, login_required for prompt=none', async () => {
    const browser = await signedIn(await createUser(app));
    const providerOnly = await createSignInClient(app, ['forge'], { redirectPatterns: [LOOPBACK_PATTERN] });
    const request = (params: Record<string, string> = {}) => standard({ client_id: providerOnly.id, ...params });
    const answer = await browser.get(request());
    expect(answer.status).toBe(302);
    expect(new URL(answer.headers.get('location')!).origin).toBe(forge.issuer);
    expect(redirectParams(await browser.get(request({ prompt: 'none' })))).toMatchObject({ error: 'login_required' });
    // Nor the helper's link: its sign-in step, not "Continue as".
    const link = await issueState(app, providerOnly.id, { redirect_url: REDIRECT });
    expect(new URL((await browser.get(link.authorize_url)).headers.get('location')!).origin).toBe(forge.issuer);
  });

  it('takes "Continue as" only when the session may answer the link: not for a prompt=login request, whatever the form says', async () => {
    const browser = await signedIn(await createUser(app));
    const page = await browser.get(standard({ prompt: 'login' }));
    expect(await page.clone().text()).toContain('name="password"');
    const forced = await browser.submit(page, app.baseUrl, { session: 'continue' });
    expect(forced.status).toBe(400);
    expect(forced.headers.get('location')).toBeNull();
  });

  it('starts no session for a sign-in the user was signed out of meanwhile (the password check takes a while)', async () => {
    const user = await createUser(app);
    const id = await userId(app, user);
    const stampBefore = (await app.get(UsersService).findById(id))!.tokensValidAfter;
    await app.get(SignOutsRepository).signOutNow({ userId: id });
    expect(await app.get(BrowserSessionsRepository).start({ id, tokensValidAfter: stampBefore }, null)).toBeUndefined();
  });

  it('offers an app’s standard request no relay-mode provider: the tokens it hands over are not the service’s', async () => {
    await registerProvider(app, forge, 'forge-relay', 'Forge relay', 'relay');
    const relayOnly = await createSignInClient(app, ['forge-relay'], { redirectPatterns: [LOOPBACK_PATTERN] });
    const answer = await new FormBrowser().get(standard({ client_id: relayOnly.id }));
    expect(answer.status).toBe(400);
    expect(await answer.text()).toContain('has no way to sign in set up right now');
    // The helper's link still relays.
    const link = await issueState(app, relayOnly.id, { redirect_url: REDIRECT });
    expect(new URL((await new FormBrowser().get(link.authorize_url)).headers.get('location')!).origin).toBe(forge.issuer);
  });

  it('takes a standard request posted as a form too (OpenID Connect Core §3.1.2.1)', async () => {
    const posted = await new FormBrowser().post(`${app.baseUrl}/sso/authorize`, Object.fromEntries(new URL(standard()).searchParams));
    expect(posted.status).toBe(200);
    expect(await posted.text()).toContain('name="password"');
  });

  it('shows the account choice for prompt=select_account within a session', async () => {
    const user = await createUser(app);
    const browser = await signedIn(user);
    const page = await browser.get(standard({ prompt: 'select_account' }));
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`Continue as ${user.username}</button>`);
    expect(html).toContain('Use another account</button>');
  });

  it('shows "Continue as USER" for prompt=consent within a session', async () => {
    const browser = await signedIn(await createUser(app));
    const page = await browser.get(standard({ prompt: 'consent' }));
    expect(page.status).toBe(200);
    const continued = await browser.submit(page, app.baseUrl, { session: 'continue' });
    expect(redirectParams(continued)).toHaveProperty('code');
  });

  it.each(SIGN_OUTS)('ends with %s: the next request asks for the password, prompt=none is login_required', async (_name, signOut) => {
    const user = await createUser(app);
    const browser = await signedIn(user);
    await signOut(app, user);
    const page = await browser.get(standard());
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('name="password"');
    expect(redirectParams(await browser.get(standard({ prompt: 'none' })))).toMatchObject({ error: 'login_required' });
  });
});
