import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { DEVICE_GRANT, type DeviceAuthorization, pollDeviceToken, startDeviceAuthorization, VerificationPage, verifyDevice } from '../../factories/device-flow.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { type PortalUser, storedHash, userId } from '../../factories/token-flow.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/** What the database holds for a device authorization: whether anyone decided, and who signed in. */
const stored = async (app: TestApp, authorization: DeviceAuthorization) =>
  (
    await query<{ status: string; user_id: string | null; signed_in_user_id: string | null }>(
      app.databaseUrl,
      'SELECT status, user_id, signed_in_user_id FROM device_codes WHERE device_code_hash = $1',
      [storedHash(authorization.device_code)],
    )
  )[0];

const heading = (page: VerificationPage) => /<h1>(.*?)<\/h1>/.exec(page.html)?.[1];

// Behind a trusted proxy, so each request can come from an address of the test's choosing.
describe('the verification page /sso/device', () => {
  let app: TestApp;
  let tv: TestClient;
  let user: PortalUser;
  let address = 0;
  /** A fresh address per test, so the slow-down of wrong codes in one test does not touch another. */
  const from = () => ({ 'x-forwarded-for': `198.51.100.${++address}` });

  beforeAll(async () => {
    app = await startTestApp({ TRUST_PROXY: 'true' });
    tv = await createClient(app, { grants: [DEVICE_GRANT, 'refresh_token'], scopes: ['voyages:read', 'reports:read'] });
    user = await createUser(app);
  });
  afterAll(() => app?.close());

  const clientName = async (client: TestClient) => (await app.get(ClientsService).show(client.id)).name;

  it('shows the code form with the headers of a sign-in page: no caching, no framing, a CSRF cookie', async () => {
    const page = await VerificationPage.open(app);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('content-security-policy')).toContain("form-action 'self';");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('set-cookie')).toMatch(/^vc_csrf=[\w-]{43}; Path=\/sso\/device; HttpOnly; SameSite=Strict$/);
    expect(heading(page)).toBe('Connect a device');
    expect(page.typedCode).toBe('');
    expect(page.html).not.toContain('<script');
  });

  it('keeps the CSRF token of its own cookie for another tab, but replaces a planted value it could not have issued', async () => {
    const first = await VerificationPage.open(app);
    const token = first.hidden.csrf_token;
    const again = await fetch(`${app.baseUrl}/sso/device`, { headers: { cookie: `vc_csrf=${token}` } });
    expect(await again.text()).toContain(`name="csrf_token" value="${token}"`);
    for (const planted of ['%00', 'x', '<b>', 'a'.repeat(44)]) {
      const page = await fetch(`${app.baseUrl}/sso/device`, { headers: { cookie: `vc_csrf=${planted}` } });
      const rendered = /name="csrf_token" value="([^"]*)"/.exec(await page.text())![1];
      expect(rendered, planted).toMatch(/^[\w-]{43}$/);
      expect(page.headers.get('set-cookie')).toContain(`vc_csrf=${rendered};`);
    }
  });

  it('pre-fills the code from verification_uri_complete, escaped, and still asks the user to continue', async () => {
    const authorization = await startDeviceAuthorization(app, tv);
    const page = await VerificationPage.open(app, new URL(authorization.verification_uri_complete).search);
    expect(page.typedCode).toBe(authorization.user_code);
    expect(heading(page)).toBe('Connect a device');
    expect((await stored(app, authorization)).status).toBe('pending');
    const hostile = await VerificationPage.open(app, `?user_code=${encodeURIComponent('"><script>alert(1)</script>')}`);
    expect(hostile.html).not.toContain('<script>');
    expect(hostile.typedCode).toBe('"><script>alert(1)</script>');
  });

  it('reads a code typed in lower case, without the dash or with spaces, and asks to sign in naming the client', async () => {
    const authorization = await startDeviceAuthorization(app, tv);
    for (const typed of [authorization.user_code.toLowerCase().replace('-', ''), ` ${authorization.user_code.replace('-', ' ')} `, authorization.user_code.toLowerCase()]) {
      const page = await (await VerificationPage.open(app, '', from())).submit({ user_code: typed });
      expect(page.status, typed).toBe(200);
      expect(heading(page)).toBe('Sign in');
      expect(page.html).toContain(`Use your voyage-planning portal account to connect <strong>${await clientName(tv)}</strong>`);
      expect(page.html).toContain(authorization.user_code);
      expect(page.html).toMatch(/name="username"[\s\S]*name="password"/);
    }
    expect((await stored(app, authorization)).status).toBe('pending');
  });

  it('shows the code form again with 400 saying why for what cannot be a code, an unknown or expired code, or one of a disabled or removed application, keeping what was typed unless it expired', async () => {
    const expired = await startDeviceAuthorization(app, tv);
    await query(app.databaseUrl, `UPDATE device_codes SET expires_at = now() - interval '1 second' WHERE device_code_hash = $1`, [storedHash(expired.device_code)]);
    const disabledClient = await createClient(app, { grants: [DEVICE_GRANT] });
    const ofDisabled = await startDeviceAuthorization(app, disabledClient);
    await app.get(ClientsService).setEnabled(disabledClient.id, false);
    const deleted = await createClient(app, { grants: [DEVICE_GRANT] });
    const ofDeleted = await startDeviceAuthorization(app, deleted);
    await app.get(ClientsService).delete(deleted.id);
    for (const [typed, error] of [
      ['BCDF-GHJK', 'No device is waiting for the code BCDF-GHJK. Check the code on your device.'],
      ['not a code', 'A code never has "O", "A" or "E". Check the code on your device.'],
      ['AAAA-AAAA', 'A code never has "A". Check the code on your device.'],
      ['bcd1-ghe!', 'A code never has "1", "E" or "!". Check the code on your device.'],
      ['BCD', 'That code has 3 characters, but a code has 8 letters. Check the code on your device.'],
      ['B', 'That code has 1 character, but a code has 8 letters. Check the code on your device.'],
      [expired.user_code, `The code ${expired.user_code} has expired. Start again on your device to get a new one.`],
      [ofDisabled.user_code, `The code ${ofDisabled.user_code} is for ${await clientName(disabledClient)}, which an administrator has disabled: it cannot be connected.`],
      [ofDeleted.user_code, `The code ${ofDeleted.user_code} is for an application that has been removed: it cannot be connected.`],
      ['x'.repeat(500), 'That code has 500 characters, but a code has 8 letters. Check the code on your device.'],
    ]) {
      const page = await (await VerificationPage.open(app, '', from())).submit({ user_code: typed });
      expect(page.status, typed).toBe(400);
      expect(page.error).toBe(error);
      expect(heading(page)).toBe('Connect a device');
      // An expired code is not a typo: the field is emptied for the new code.
      expect(page.typedCode).toBe(typed === expired.user_code ? '' : typed);
    }
  });

  it('does not count what cannot be a code as a wrong code', async () => {
    const headers = from();
    const page = await VerificationPage.open(app, '', headers);
    for (let i = 0; i < 12; i++) expect((await page.submit({ user_code: 'BCDF' })).status).toBe(400);
    const authorization = await startDeviceAuthorization(app, tv);
    expect((await page.submit({ user_code: authorization.user_code })).status).toBe(200);
  });

  it('asks for the code when none was typed, without counting it as a wrong one', async () => {
    const page = await (await VerificationPage.open(app, '', from())).submit({ user_code: '' });
    expect(page.status).toBe(400);
    expect(page.error).toBe('Enter the code shown on your device.');
  });

  it('slows down wrong codes from one address after 10, with Retry-After, even for a right code, and only for that address', async () => {
    const headers = from();
    const page = await VerificationPage.open(app, '', headers);
    for (let i = 0; i < 10; i++) expect((await page.submit({ user_code: 'BCDF-GHJK' })).status).toBe(400);
    await page.submit({ user_code: 'BCDF-GHJK' });
    expect(page.status).toBe(429);
    expect(Number(page.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(page.error).toMatch(/^Too many wrong codes\. Try again in \d+ seconds?\.$/);

    const authorization = await startDeviceAuthorization(app, tv);
    expect((await page.submit({ user_code: authorization.user_code })).status).toBe(429);
    const elsewhere = await (await VerificationPage.open(app, '', from())).submit({ user_code: authorization.user_code });
    expect(elsewhere.status).toBe(200);
  });

  it('counts IPv6 addresses by their /64 for wrong codes', async () => {
    for (let i = 1; i <= 10; i++) {
      const page = await (await VerificationPage.open(app, '', { 'x-forwarded-for': `2001:db8:77:1::${i}` })).submit({ user_code: 'BCDF-GHJK' });
      expect(page.status).toBe(400);
    }
    const sameSubnet = await (await VerificationPage.open(app, '', { 'x-forwarded-for': '2001:db8:77:1:ffff::1' })).submit({ user_code: 'BCDF-GHJK' });
    expect(sameSubnet.status).toBe(429);
    const nextSubnet = await (await VerificationPage.open(app, '', { 'x-forwarded-for': '2001:db8:77:2::1' })).submit({ user_code: 'BCDF-GHJK' });
    expect(nextSubnet.status).toBe(400);
  });

  it('refuses a form without the CSRF cookie or with another token (403), deciding nothing', async () => {
    const authorization = await startDeviceAuthorization(app, tv);
    const forged = await fetch(`${app.baseUrl}/sso/device`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...from() },
      body: new URLSearchParams({ csrf_token: 'a'.repeat(43), user_code: authorization.user_code, username: user.username, password: user.password }),
    });
    expect(forged.status).toBe(403);
    expect(await forged.text()).toContain('Your browser did not send this page&#39;s cookie: allow cookies for this site. Please continue again.');

    const page = await VerificationPage.open(app, '', from());
    await page.submit({ user_code: authorization.user_code });
    await page.submit({ username: user.username, password: user.password });
    expect(heading(page)).toContain('Connect');
    await page.submit({ csrf_token: 'b'.repeat(43), decision: 'approve' });
    expect(page.status).toBe(403);
    expect((await stored(app, authorization)).status).toBe('pending');
  });

  it('signs in with the same users and messages as the login page, keeping the username after a wrong password', async () => {
    const authorization = await startDeviceAuthorization(app, tv);
    const page = await (await VerificationPage.open(app, '', from())).submit({ user_code: authorization.user_code });
    await page.submit({ username: user.username, password: 'not the password' });
    expect(page.status).toBe(200);
    expect(page.error).toBe('Wrong username or password.');
    expect(page.html).toContain(`value="${user.username}"`);
    await page.submit({ username: user.username, password: '' });
    expect(page.status).toBe(400);
    expect(page.error).toBe('Enter your username and password.');
    await page.submit({ username: '', password: '' });
    expect(page.status).toBe(400);
    expect(page.error).toBe('Enter your username and password.');
    expect((await stored(app, authorization)).signed_in_user_id).toBeNull();
  });

  it('shares the failed-login slow-down with /sso/authorize', async () => {
    const victim = await createUser(app);
    const headers = from();
    const authorization = await startDeviceAuthorization(app, tv);
    const page = await (await VerificationPage.open(app, '', headers)).submit({ user_code: authorization.user_code });
    for (let i = 0; i < 5; i++) expect((await page.submit({ username: victim.username, password: 'guessed wrong' })).error).toBe('Wrong username or password.');
    const helperClient = await createClient(app);
    const login = await signIn((await issueState(app, helperClient.id)).authorize_url, victim, headers);
    expect(login.status).toBe(429);
    expect(await login.text()).toContain('Too many failed attempts.');
  });

  it('names the client and the scopes asked on the approval page, with Approve and Deny, and approves for the signed-in user', async () => {
    const authorization = await startDeviceAuthorization(app, tv, { scope: 'voyages:read reports:read' });
    const page = await (await VerificationPage.open(app, '', from())).submit({ user_code: authorization.user_code });
    await page.submit({ username: user.username, password: user.password });
    expect(page.status).toBe(200);
    expect(heading(page)).toBe(`Connect <strong>${await clientName(tv)}</strong>?`);
    // No description set: each scope is shown by its name, as code.
    expect(page.html).toContain('<li><code>voyages:read</code></li><li><code>reports:read</code></li>');
    expect(page.html).toContain(`signed in as <strong>${user.username}</strong>`);
    expect(page.html).toContain('<button type="submit" name="decision" value="approve">Approve</button>');
    expect(page.html).toContain('<button type="submit" name="decision" value="deny" class="secondary">Deny</button>');
    expect(await stored(app, authorization)).toMatchObject({ status: 'pending', user_id: null, signed_in_user_id: await userId(app, user) });

    await page.submit({ decision: 'approve' });
    expect(page.status).toBe(200);
    expect(heading(page)).toBe('Device connected');
    expect(await stored(app, authorization)).toMatchObject({ status: 'approved', user_id: await userId(app, user) });
  });

  it('says what the device asks for when it asked for no scope', async () => {
    const authorization = await startDeviceAuthorization(app, tv);
    const page = await (await VerificationPage.open(app, '', from())).submit({ user_code: authorization.user_code });
    await page.submit({ username: user.username, password: user.password });
    expect(page.html).toContain('It asks to act for you on your account.');
    expect(page.html).not.toContain('<ul');
  });

  it('escapes the client name on every step', async () => {
    const odd = await app.get(ClientsService).create({ name: `<b>Bridge & "TV"</b> ${Date.now()}`, grants: [DEVICE_GRANT] });
    const authorization = await startDeviceAuthorization(app, { id: odd.client_id, secret: odd.client_secret });
    const page = await (await VerificationPage.open(app, '', from())).submit({ user_code: authorization.user_code });
    expect(page.html).toContain('&lt;b&gt;Bridge &amp; &quot;TV&quot;&lt;/b&gt;');
    await page.submit({ username: user.username, password: user.password });
    expect(page.html).toContain('&lt;b&gt;Bridge &amp; &quot;TV&quot;&lt;/b&gt;');
    expect(page.html).not.toContain('<b>Bridge');
  });

  it('decides once: a replayed approval form, one from an earlier sign-in, or a forged one decides nothing', async () => {
    const authorization = await startDeviceAuthorization(app, tv);
    const first = await (await VerificationPage.open(app, '', from())).submit({ user_code: authorization.user_code });
    await first.submit({ username: user.username, password: user.password });
    const earlierForm = first.hidden;
    // The same user signs in again in another tab: only the newest approval form counts.
    const second = await (await VerificationPage.open(app, '', from())).submit({ user_code: authorization.user_code });
    await second.submit({ username: user.username, password: user.password });

    await first.submit({ ...earlierForm, decision: 'approve' });
    expect(first.status).toBe(403);
    expect(first.error).toBe('This approval form was replaced by a later sign-in, perhaps in another tab. Decide there, or sign in again here.');
    expect((await stored(app, authorization)).status).toBe('pending');

    const secondForm = second.hidden;
    await second.submit({ ...secondForm, approval: 'forged', decision: 'approve' });
    expect(second.status).toBe(403);
    await second.submit({ ...secondForm, csrf_token: second.hidden.csrf_token, decision: 'maybe' });
    expect(second.status).toBe(400);
    expect((await stored(app, authorization)).status).toBe('pending');
  });

  it('refuses to decide again after a decision, and the device sees the first one', async () => {
    const authorization = await startDeviceAuthorization(app, tv);
    const page = await (await VerificationPage.open(app, '', from())).submit({ user_code: authorization.user_code });
    await page.submit({ username: user.username, password: user.password });
    const form = page.hidden;
    await page.submit({ decision: 'deny' });
    expect(heading(page)).toBe('Request denied');
    // The approval form submitted again, from a page with a valid CSRF cookie of its own.
    const replay = await VerificationPage.open(app, '', from());
    await replay.submit({ user_code: form.user_code, approval: form.approval, decision: 'approve' });
    expect(replay.status).toBe(400);
    expect(replay.error).toBe(`The code ${form.user_code.slice(0, 4)}-${form.user_code.slice(4)} was already denied, perhaps in another tab: the device was not connected. To connect it, start again on your device.`);
    expect((await stored(app, authorization)).status).toBe('denied');
    expect((await pollDeviceToken(app, tv, authorization.device_code)).body).toMatchObject({ error: 'access_denied' });
  });

  it('answers a NUL character or a repeated field with the code form and 400, not a 500', async () => {
    const page = await VerificationPage.open(app, '', from());
    await page.submit({ user_code: 'BCDF\u0000GHJK' });
    expect(page.status).toBe(400);
    expect(page.error).toBe('The form was malformed. Enter the code again.');
    const repeated = await fetch(`${app.baseUrl}/sso/device`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...from() },
      body: 'user_code=A&user_code=B',
    });
    expect(repeated.status).toBe(400);
  });

  it('lets a whole approval through verifyDevice, the factory the other tests use', async () => {
    const authorization = await startDeviceAuthorization(app, tv);
    const done = await verifyDevice(app, authorization.user_code, user, 'approve', from());
    expect(heading(done)).toBe('Device connected');
  });
});
