import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { NEW_STAMP_SQL } from '../../../src/grants/revocations.js';
import { SignOutsRepository } from '../../../src/grants/sign-outs.repository.js';
import { UsersService } from '../../../src/users/users.service.js';
import { issueState } from '../../factories/state.factory.js';
import { LOOPBACK_PATTERN } from '../../factories/token-flow.factory.js';
import { ALICE, confirmSignIn, createSignInClient, heading, issuedRows, linkedUser, newKek, registerProvider, startDeviceCallback } from '../../factories/upstream.factory.js';
import { query } from '../../setup/database.js';
import { launchChromium } from '../../setup/chromium.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

// What keeps a sign-in through a provider the user's own act: the provider's sign-in page every
// time (never a silent single sign-on for a device's link someone else may have sent), the
// service's own "Continue to DEVICE?" page before a helper device gets anything (as whom, and
// where the sign-in goes), the client's current sign-in methods at the callback, and one
// browser binding for all its tabs.

const credentials = { username: 'alice', password: ALICE.password };

describe('a sign-in through a provider is the user’s own act', () => {
  let app: TestApp;
  let upstream: UpstreamProvider;
  let browser: Browser;
  let context: BrowserContext;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek() });
    [upstream, browser] = await Promise.all([startUpstreamProvider({ accounts: [ALICE] }), launchChromium()]);
    await registerProvider(app, upstream, 'corp', 'Corp SSO');
    await registerProvider(app, upstream, 'corp-relay', 'Corp SSO (relay)', 'relay');
  });
  afterAll(async () => {
    await browser?.close();
    await upstream?.stop();
    await app?.close();
  });
  afterEach(async () => context?.close());

  const newBrowser = async () => {
    context = await browser.newContext({ javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    return context;
  };

  it('shows the provider’s sign-in page again to a browser that already has a session there', async () => {
    const client = await createSignInClient(app, ['corp']);
    const page = await (await newBrowser()).newPage();
    await page.goto((await issueState(app, client.id)).authorize_url);
    await signInAtUpstream(page, credentials);
    await confirmSignIn(page);
    expect(await heading(page)).toBe("You're signed in");
    // The provider has a session for this browser now, and so has the service: a second device
    // link asks "Continue as alice", and another account means the provider's page again.
    await page.goto((await issueState(app, client.id)).authorize_url);
    expect(await page.locator('main').textContent()).toContain('You are signed in as alice.');
    await page.getByRole('button', { name: 'Use another account' }).click();
    expect(new URL(page.url()).origin).toBe(upstream.issuer);
    await expect.poll(() => page.locator('input[name="password"]').isVisible(), { timeout: 5000 }).toBe(true);
  });

  it('refuses a sign-in that comes back after the client stopped signing in through that provider', async () => {
    const client = await createSignInClient(app, ['corp', 'local']);
    const page = await (await newBrowser()).newPage();
    await page.goto((await issueState(app, client.id)).authorize_url);
    await page.getByRole('button', { name: 'Corp SSO' }).click();
    await app.get(ClientsService).update(client.id, { signIn: ['local'] });
    await signInAtUpstream(page, credentials);
    expect(await heading(page)).toBe('This sign-in does not work');
    expect(await page.locator('main p').textContent()).toBe('This application no longer signs in through Corp SSO. Start the sign-in again from your device.');
  });

  it('finishes sign-ins started in two tabs of one browser, each for its own device', async () => {
    const client = await createSignInClient(app, ['corp']);
    const browserContext = await newBrowser();
    const [first, second] = [await browserContext.newPage(), await browserContext.newPage()];
    const [firstLink, secondLink] = [await issueState(app, client.id), await issueState(app, client.id)];
    await first.goto(firstLink.authorize_url);
    await second.goto(secondLink.authorize_url);
    await signInAtUpstream(first, credentials);
    await signInAtUpstream(second, credentials);
    await confirmSignIn(first);
    await confirmSignIn(second);
    expect([await heading(first), await heading(second)]).toEqual(["You're signed in", "You're signed in"]);
    for (const link of [firstLink, secondLink]) expect((await fetch(link.code_url)).status).toBe(200);
  });

  /** The confirmation form's fields, as the page holds them. */
  async function formFields(page: Awaited<ReturnType<BrowserContext['newPage']>>): Promise<Record<string, string>> {
    const fields: Record<string, string> = {};
    for (const input of await page.locator('form input[type="hidden"]').all()) fields[(await input.getAttribute('name'))!] = (await input.getAttribute('value'))!;
    return fields;
  }
  /** The form posted by hand with `fields`, and the cookies given (none: another browser). */
  const postConfirmation = (fields: Record<string, string>, cookie = '') =>
    fetch(`${app.baseUrl}/sso/authorize`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie }, body: new URLSearchParams(fields) });
  const cookiesOf = async (context: BrowserContext) => (await context.cookies(app.baseUrl)).map(({ name, value }) => `${name}=${value}`).join('; ');

  it('asks before a device gets anything: the page names the account and the device’s host, and only Continue sends the code', async () => {
    const device = await startDeviceCallback();
    try {
      const client = await createSignInClient(app, ['corp'], { redirectPatterns: [LOOPBACK_PATTERN] });
      const link = await issueState(app, client.id, { redirect_url: device.url });
      const page = await (await newBrowser()).newPage();
      await page.goto(link.authorize_url);
      const before = await issuedRows(app);
      await signInAtUpstream(page, credentials);

      expect(await heading(page)).toBe(`Continue to ${client.name}?`);
      const text = await page.locator('main').textContent();
      expect(text).toContain('You signed in as alice with Corp SSO.');
      expect(text).toContain(`Your sign-in is sent to the device at ${new URL(device.url).host}. Continue only if that is yours.`);
      expect(device.received).toHaveLength(0);
      expect((await issuedRows(app)).authorization_codes).toBe(before.authorization_codes);

      await confirmSignIn(page);
      expect(device.received).toHaveLength(1);
      expect([...device.received[0].searchParams.keys()].sort()).toEqual(['code', 'iss', 'state']);
    } finally {
      await device.close();
    }
  });

  it('Cancel on that page sends the device access_denied, and erases a relayed sign-in’s tokens', async () => {
    const device = await startDeviceCallback();
    try {
      const client = await createSignInClient(app, ['corp-relay'], { redirectPatterns: [LOOPBACK_PATTERN] });
      const link = await issueState(app, client.id, { redirect_url: device.url });
      const page = await (await newBrowser()).newPage();
      await page.goto(link.authorize_url);
      await signInAtUpstream(page, credentials);
      expect(await page.locator('main').textContent()).toContain('You signed in with Corp SSO (relay).');
      const held = () => query<{ sealed: Buffer | null }>(app.databaseUrl, "SELECT tokens_sealed AS sealed FROM upstream_sign_ins WHERE purpose->>'state' = $1", [link.state]);
      expect((await held())[0].sealed).toBeInstanceOf(Buffer);

      await confirmSignIn(page, 'Cancel');
      expect(device.received.map((url) => Object.fromEntries(url.searchParams))).toEqual([{ error: 'access_denied', state: link.state, iss: app.baseUrl }]);
      expect((await held())[0].sealed).toBeNull();
      const [handedOver] = await query<{ count: number }>(app.databaseUrl, 'SELECT count(*)::int AS count FROM relay_hand_overs WHERE client_id = $1', [client.id]);
      expect(handedOver.count).toBe(0);
    } finally {
      await device.close();
    }
  });

  it('takes the confirmation once, only from the browser that signed in, and only as Continue or Cancel', async () => {
    const client = await createSignInClient(app, ['corp']);
    const link = await issueState(app, client.id);
    const browserContext = await newBrowser();
    const page = await browserContext.newPage();
    await page.goto(link.authorize_url);
    await signInAtUpstream(page, credentials);
    const fields = await formFields(page);
    expect(Object.keys(fields).sort()).toEqual(['client_id', 'confirmation', 'response_type', 'state']);
    const cookies = await cookiesOf(browserContext);
    const before = await issuedRows(app);

    // Another browser, with the form's one-time value but not the sign-in's cookie: refused, nothing spent.
    const foreign = await postConfirmation({ ...fields, decision: 'continue' });
    expect(foreign.status).toBe(400);
    expect(await foreign.text()).toContain('This sign-in was not finished in this browser, or is too old.');
    // A decision the form does not offer: refused, nothing spent.
    const changed = await postConfirmation({ ...fields, decision: 'approve' }, cookies);
    expect(changed.status).toBe(400);
    expect(await changed.text()).toContain('The form was changed: choose Continue or Cancel.');
    expect(await issuedRows(app)).toEqual(before);
    expect((await fetch(link.code_url)).status).toBe(404);

    await confirmSignIn(page);
    expect(await heading(page)).toBe("You're signed in");
    const replayed = await postConfirmation({ ...fields, decision: 'continue' }, await cookiesOf(browserContext));
    expect(replayed.status).toBe(400);
    expect(await replayed.text()).toContain('This sign-in link was already used');
  });

  /** Alice's portal user, linked to corp (made here when no test signed her in yet). */
  const aliceId = async () => (await linkedUser(app, 'corp', ALICE.sub))?.id ?? (await app.get(UsersService).linkUpstream({ name: 'corp', issuer: upstream.issuer }, ALICE.sub, {})).id;

  /** grants:revoke's two reaches: every device of the user, or one client's. */
  const SIGN_OUTS: [string, (userId: string, clientId: string) => { userId: string; clientId?: string }][] = [
    ['of every device', (userId) => ({ userId })],
    ['of this client only (--client)', (userId, clientId) => ({ userId, clientId })],
  ];

  it.each(SIGN_OUTS)('grants:revoke %s while "Continue to CLIENT?" waits voids that sign-in: Continue says it has ended and nothing is issued', async (_, target) => {
    const client = await createSignInClient(app, ['corp']);
    const link = await issueState(app, client.id);
    const page = await (await newBrowser()).newPage();
    await page.goto(link.authorize_url);
    await signInAtUpstream(page, credentials);
    expect(await heading(page)).toBe(`Continue to ${client.name}?`);
    const before = await issuedRows(app);

    await app.get(SignOutsRepository).signOutNow(target(await aliceId(), client.id));
    await confirmSignIn(page);
    expect(await heading(page)).toBe('This sign-in has ended');
    expect(await page.locator('main p').first().textContent()).toContain('signed out');
    expect((await fetch(link.code_url)).status).toBe(404);
    const after = await issuedRows(app);
    expect([after.authorizations, after.authorization_codes, after.grants]).toEqual([before.authorizations, before.authorization_codes, before.grants]);
  });

  it('Continue checks the sign-in against its own time, not the stamp read again: a sign-out that missed the waiting row still voids it', async () => {
    const client = await createSignInClient(app, ['corp']);
    const link = await issueState(app, client.id);
    const page = await (await newBrowser()).newPage();
    await page.goto(link.authorize_url);
    await signInAtUpstream(page, credentials);
    const before = await issuedRows(app);
    // As a sign-out that committed between the callback's user check and the hold: the stamp moved, the row not marked.
    await query(app.databaseUrl, `UPDATE portal_users SET tokens_valid_after = ${NEW_STAMP_SQL} WHERE id = $1`, [await aliceId()]);

    await confirmSignIn(page);
    expect(await heading(page)).toBe('This sign-in has ended');
    expect((await fetch(link.code_url)).status).toBe(404);
    expect((await issuedRows(app)).authorization_codes).toBe(before.authorization_codes);
  });

  it('grants:revoke while the user is still at the provider voids that sign-in: the callback says it has ended and nothing is issued', async () => {
    const client = await createSignInClient(app, ['corp']);
    const link = await issueState(app, client.id);
    const page = await (await newBrowser()).newPage();
    await page.goto(link.authorize_url);
    expect(new URL(page.url()).origin).toBe(upstream.issuer);
    await app.get(SignOutsRepository).signOutNow({ userId: await aliceId() });
    const before = await issuedRows(app);

    await signInAtUpstream(page, credentials);
    expect(await heading(page)).toBe('This sign-in has ended');
    expect((await fetch(link.code_url)).status).toBe(404);
    const after = await issuedRows(app);
    expect([after.authorizations, after.authorization_codes, after.grants]).toEqual([before.authorizations, before.authorization_codes, before.grants]);
  });
});
