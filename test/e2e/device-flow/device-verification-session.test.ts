import { createRemoteJWKSet, decodeJwt, type JWTPayload, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsersService } from '../../../src/users/users.service.js';
import { DEVICE_GRANT, type DeviceAuthorization, pollDeviceToken, startDeviceAuthorization, VerificationPage } from '../../factories/device-flow.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { exchangeCode, LOOPBACK_PATTERN, type PortalUser, pkcePair, storedHash, userId } from '../../factories/token-flow.factory.js';
import { query } from '../../setup/database.js';
import { FormBrowser } from '../../setup/form-browser.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// Single sign-on on the verification page (RFC 8628 §3.3): a sign-in there leaves a browser
// session like the login page's, and within a session the page asks "Continue as USER" or "Use
// another account" after the code, never approving by itself: the approval form stays the act.
// The device grant's ID tokens carry the session's sign-in (auth_time, sid).

const REDIRECT = 'http://127.0.0.1:8765/callback';

const heading = (page: VerificationPage) => /<h1>(.*?)<\/h1>/.exec(page.html)?.[1];

describe('the verification page within a browser session', () => {
  let app: TestApp;
  let tv: TestClient;
  let web: TestClient;
  let jwks: ReturnType<typeof createRemoteJWKSet>;
  const { verifier, challenge } = pkcePair();

  beforeAll(async () => {
    app = await startTestApp({});
    tv = await createClient(app, { grants: [DEVICE_GRANT, 'refresh_token'], scopes: ['voyages:read'] });
    web = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
    jwks = createRemoteJWKSet(new URL(`${app.baseUrl}/.well-known/jwks.json`));
  });
  afterAll(() => app?.close());

  const standard = (state: string) =>
    `${app.baseUrl}/sso/authorize?${new URLSearchParams({ response_type: 'code', client_id: web.id, redirect_uri: REDIRECT, scope: 'openid', state, code_challenge: challenge, code_challenge_method: 'S256' })}`;
  const codeOf = (response: Response) => new URL(response.headers.get('location')!).searchParams.get('code')!;

  /** The ID token of a standard request's code, checked against the JWKS. */
  async function idTokenOf(code: string, client = web): Promise<JWTPayload> {
    const exchanged = await exchangeCode(app, client, code, { redirect_uri: REDIRECT, code_verifier: verifier });
    expect(exchanged.status).toBe(200);
    return (await jwtVerify(exchanged.body.id_token as string, jwks, { issuer: app.baseUrl, audience: client.id })).payload;
  }

  /** A browser that signed in with a password on the login page (a standard request): its session, and that sign-in's ID token. */
  async function signedInAtLogin(user: PortalUser) {
    const browser = new FormBrowser();
    const login = await browser.submit(await browser.get(standard('s1')), app.baseUrl, { username: user.username, password: user.password });
    expect(login.status).toBe(302);
    return { cookies: new Map([['vc_session', browser.cookie('vc_session')!]]), idToken: await idTokenOf(codeOf(login)) };
  }

  /** The device's poll once approved: its tokens (an earlier poll's interval waived). */
  async function polled(authorization: DeviceAuthorization) {
    await query(app.databaseUrl, 'UPDATE device_codes SET last_polled_at = NULL WHERE device_code_hash = $1', [storedHash(authorization.device_code)]);
    const response = await pollDeviceToken(app, tv, authorization.device_code);
    expect(response.status).toBe(200);
    return response.body as { access_token: string; id_token?: string; refresh_token: string; scope: string };
  }

  const stored = async (authorization: DeviceAuthorization) =>
    (
      await query<{ status: string; signed_in_user_id: string | null }>(app.databaseUrl, 'SELECT status, signed_in_user_id FROM device_codes WHERE device_code_hash = $1', [
        storedHash(authorization.device_code),
      ])
    )[0];

  it('starts a browser session with a password sign-in on the verification page: the next standard request in that browser gets a code without a page', async () => {
    const user = await createUser(app);
    const authorization = await startDeviceAuthorization(app, tv);
    const page = await (await VerificationPage.open(app)).submit({ user_code: authorization.user_code });
    await page.submit({ username: user.username, password: user.password });
    expect(heading(page)).toContain('Connect');
    const cookie = page.headers.getSetCookie().find((line) => line.startsWith('vc_session='));
    expect(cookie).toMatch(/^vc_session=[\w-]{43}; Max-Age=43200; Path=\/; HttpOnly; SameSite=Lax$/);

    const silent = await fetch(standard('s2'), { redirect: 'manual', headers: { cookie: `vc_session=${page.cookies.get('vc_session')}` } });
    expect(silent.status).toBe(302);
    const idToken = await idTokenOf(codeOf(silent));
    expect(idToken.sub).toBe(await userId(app, user));
  });

  it('shows "Continue as USER" and "Use another account" after the code within a session, and Continue leads to the approval form, not to approval', async () => {
    const user = await createUser(app);
    const { cookies } = await signedInAtLogin(user);
    const authorization = await startDeviceAuthorization(app, tv, { scope: 'voyages:read' });
    const page = await VerificationPage.open(app, '', {}, cookies);
    await page.submit({ user_code: authorization.user_code });
    expect(page.status).toBe(200);
    expect(heading(page)).toBe('Choose an account');
    expect(page.html).toContain(`You are signed in as <strong>${user.username}</strong>.`);
    expect(page.html).toContain(`<button type="submit" name="session" value="continue">Continue as ${user.username}</button>`);
    expect(page.html).toContain('<button type="submit" name="session" value="another" class="secondary">Use another account</button>');
    expect(page.html).not.toContain('name="password"');
    expect(await stored(authorization)).toEqual({ status: 'pending', signed_in_user_id: null });

    await page.submit({ session: 'continue' });
    expect(page.status).toBe(200);
    expect(heading(page)).toMatch(/^Connect <strong>.*<\/strong>\?$/);
    expect(page.html).toContain(`You are signed in as <strong>${user.username}</strong>.`);
    expect(page.html).toContain('<button type="submit" name="decision" value="approve">Approve</button>');
    // Continuing is not approving: the code still waits for the decision, and the device with it.
    expect(await stored(authorization)).toEqual({ status: 'pending', signed_in_user_id: await userId(app, user) });
    expect((await pollDeviceToken(app, tv, authorization.device_code)).body).toMatchObject({ error: 'authorization_pending' });
    // Nothing here began another session.
    expect(page.headers.getSetCookie().some((line) => line.startsWith('vc_session='))).toBe(false);

    await page.submit({ decision: 'approve' });
    expect(heading(page)).toBe('Device connected');
    expect(decodeJwt((await polled(authorization)).access_token).sub).toBe(await userId(app, user));
  });

  it('signs another account in after "Use another account", which then owns the approval and the session', async () => {
    const [first, second] = [await createUser(app), await createUser(app)];
    const { cookies } = await signedInAtLogin(first);
    const authorization = await startDeviceAuthorization(app, tv);
    const page = await VerificationPage.open(app, '', {}, cookies);
    await page.submit({ user_code: authorization.user_code });
    await page.submit({ session: 'another' });
    expect(page.status).toBe(200);
    expect(heading(page)).toBe('Sign in');
    expect(page.html).toContain('name="password"');
    await page.submit({ username: second.username, password: second.password });
    expect(page.html).toContain(`You are signed in as <strong>${second.username}</strong>.`);
    expect(page.cookies.get('vc_session')).not.toBe(cookies.get('vc_session'));
    await page.submit({ decision: 'approve' });
    expect(decodeJwt((await polled(authorization)).access_token).sub).toBe(await userId(app, second));

    const next = await startDeviceAuthorization(app, tv);
    const tab = await VerificationPage.open(app, '', {}, page.cookies);
    await tab.submit({ user_code: next.user_code });
    expect(tab.html).toContain(`Continue as ${second.username}</button>`);
  });

  it('asks to sign in again when the session ended before Continue, and refuses a Continue without the CSRF cookie', async () => {
    const user = await createUser(app);
    const { cookies } = await signedInAtLogin(user);
    const authorization = await startDeviceAuthorization(app, tv);
    const page = await VerificationPage.open(app, '', {}, cookies);
    await page.submit({ user_code: authorization.user_code });
    const form = page.hidden;

    const forged = await fetch(`${app.baseUrl}/sso/device`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `vc_session=${cookies.get('vc_session')}` },
      body: new URLSearchParams({ ...form, session: 'continue' }),
    });
    expect(forged.status).toBe(403);
    expect(await stored(authorization)).toEqual({ status: 'pending', signed_in_user_id: null });

    await app.get(UsersService).setPassword(user.username, 'a new password, long enough');
    await page.submit({ session: 'continue' });
    expect(page.status).toBe(400);
    expect(heading(page)).toBe('Sign in');
    expect(page.error).toBe('Your sign-in here has ended. Please sign in again.');
    expect(await stored(authorization)).toEqual({ status: 'pending', signed_in_user_id: null });
  });

  it("gives the device grant with openid an ID token whose auth_time and sid are the session's: continued, or begun on the verification page", async () => {
    const user = await createUser(app);
    const { cookies, idToken } = await signedInAtLogin(user);
    const authorization = await startDeviceAuthorization(app, tv, { scope: 'openid voyages:read' });
    const page = await VerificationPage.open(app, '', {}, cookies);
    await page.submit({ user_code: authorization.user_code });
    await page.submit({ session: 'continue' });
    await page.submit({ decision: 'approve' });
    const tokens = await polled(authorization);
    expect(tokens.scope).toBe('openid voyages:read');
    const { payload } = await jwtVerify(tokens.id_token!, jwks, { issuer: app.baseUrl, audience: tv.id });
    expect(payload).toMatchObject({ sub: await userId(app, user), auth_time: idToken.auth_time, sid: idToken.sid });
    expect(payload).not.toHaveProperty('nonce');

    // A password sign-in on the verification page: its session's sign-in, as the next standard request there shows it.
    const other = await createUser(app);
    const fresh = await startDeviceAuthorization(app, tv, { scope: 'openid' });
    const signingIn = await (await VerificationPage.open(app)).submit({ user_code: fresh.user_code });
    await signingIn.submit({ username: other.username, password: other.password });
    await signingIn.submit({ decision: 'approve' });
    const deviceIdToken = decodeJwt((await polled(fresh)).id_token!);
    const silent = await fetch(standard('s3'), { redirect: 'manual', headers: { cookie: `vc_session=${signingIn.cookies.get('vc_session')}` } });
    const sessionIdToken = await idTokenOf(codeOf(silent));
    expect(deviceIdToken).toMatchObject({ sub: await userId(app, other), auth_time: sessionIdToken.auth_time, sid: sessionIdToken.sid });
    expect(deviceIdToken.sid).not.toBe(idToken.sid);
  });
});
