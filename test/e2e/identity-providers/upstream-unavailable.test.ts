import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEVICE_GRANT, startDeviceAuthorization, VerificationPage } from '../../factories/device-flow.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { ALICE, createSignInClient, holdCallback, issuedRows, newKek, registerProvider } from '../../factories/upstream.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

// The provider down or silent: the user gets a 503 page saying so, within IDP_HTTP_TIMEOUT_MS,
// and nothing is issued.

const TIMEOUT_MS = 1000;

const headingOf = (html: string) => /<h1>([^<]*)<\/h1>/.exec(html)?.[1];
const messageOf = (html: string) => /<\/h1>\s*<p>([^<]*)<\/p>/.exec(html)?.[1];
const signInsStarted = async (app: TestApp) => (await query<{ count: number }>(app.databaseUrl, 'SELECT count(*)::int AS count FROM upstream_sign_ins'))[0].count;

describe('an identity provider that cannot be reached', () => {
  let app: TestApp;
  let down: UpstreamProvider;
  let silent: UpstreamProvider;
  let browser: Browser;
  let context: BrowserContext | undefined;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek(), CODE_POLL_MIN_INTERVAL: '0', IDP_HTTP_TIMEOUT_MS: String(TIMEOUT_MS) });
    [down, silent, browser] = await Promise.all([startUpstreamProvider({ accounts: [ALICE] }), startUpstreamProvider({ accounts: [ALICE] }), launchChromium()]);
    await registerProvider(app, down, 'corp', 'Corp SSO');
    await registerProvider(app, silent, 'quiet', 'Quiet SSO');
  });
  afterAll(async () => {
    silent?.resume();
    await browser?.close();
    await Promise.all([down?.stop(), silent?.stop()]);
    await app?.close();
  });
  afterEach(async () => {
    await context?.close();
    context = undefined;
  });

  it('answers a 503 page with Retry-After at /sso/authorize and at the device sign-in step when the provider is down as the sign-in starts, and the same link works once it is back', async () => {
    // Registered (its discovery checked), then down before anyone signs in: nothing of it is cached.
    await down.kill();
    const helper = await createSignInClient(app, ['corp']);
    const config = await issueState(app, helper.id);
    const before = await issuedRows(app);

    const started = Date.now();
    const authorize = await fetch(config.authorize_url, { redirect: 'manual' });
    const html = await authorize.text();
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 2000);
    expect(authorize.status).toBe(503);
    expect(authorize.headers.get('retry-after')).toBe('5');
    expect(headingOf(html)).toBe('Corp SSO is unavailable');
    expect(messageOf(html)).toBe('Corp SSO cannot be reached right now. Try again in a moment.');

    const device = await createSignInClient(app, ['corp'], { grants: [DEVICE_GRANT] });
    const authorization = await startDeviceAuthorization(app, device);
    const page = await VerificationPage.open(app);
    await page.submit({ user_code: authorization.user_code });
    expect(page.status).toBe(503);
    expect(page.headers.get('retry-after')).toBe('5');
    expect(headingOf(page.html)).toBe('Corp SSO is unavailable');
    expect(await signInsStarted(app)).toBe(0);
    expect(await issuedRows(app)).toEqual(before);

    // A failed discovery is not kept: once the provider is back, the same sign-in link leads there.
    await down.restart();
    const again = await fetch(config.authorize_url, { redirect: 'manual' });
    expect(again.status).toBe(302);
    expect(new URL(again.headers.get('location')!).origin).toBe(down.issuer);
  });

  it('answers the 503 page, not a redirect the browser cannot follow, when the provider went down after its configuration was cached', async () => {
    const helper = await createSignInClient(app, ['corp']);
    const device = await createSignInClient(app, ['corp'], { grants: [DEVICE_GRANT] });
    // The provider answers: its configuration is cached now, and the browser is sent there.
    const first = await fetch((await issueState(app, helper.id)).authorize_url, { redirect: 'manual' });
    expect(first.status).toBe(302);
    await down.kill();
    try {
      const started = Date.now();
      const authorize = await fetch((await issueState(app, helper.id)).authorize_url, { redirect: 'manual' });
      const html = await authorize.text();
      expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 2000);
      expect(authorize.status).toBe(503);
      expect(authorize.headers.get('retry-after')).toBe('5');
      expect(headingOf(html)).toBe('Corp SSO is unavailable');

      const page = await VerificationPage.open(app);
      await page.submit({ user_code: (await startDeviceAuthorization(app, device)).user_code });
      expect(page.status).toBe(503);
      expect(headingOf(page.html)).toBe('Corp SSO is unavailable');
    } finally {
      await down.restart();
    }
  });

  it('answers a 503 page within IDP_HTTP_TIMEOUT_MS when the provider stops answering during the code exchange, issuing nothing', async () => {
    const client = await createSignInClient(app, ['quiet']);
    const config = await issueState(app, client.id);
    context = await browser.newContext({ javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    const { url } = await holdCallback(app, page, config.authorize_url, { username: 'alice', password: ALICE.password });
    const before = await issuedRows(app);

    silent.pause();
    try {
      const started = Date.now();
      const response = await page.goto(url, { timeout: 8_000 });
      const elapsed = Date.now() - started;
      expect(response!.status()).toBe(503);
      expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS);
      expect(elapsed).toBeLessThan(TIMEOUT_MS + 2500);
      expect(await response!.headerValue('retry-after')).toBe('5');
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Quiet SSO is unavailable');
      expect(await page.locator('main p').textContent()).toBe('Quiet SSO could not be reached to finish the sign-in. Start the sign-in again from your device.');
    } finally {
      silent.resume();
    }
    expect(await issuedRows(app)).toEqual(before);
    expect((await fetch(config.code_url)).status).toBe(404);
  });
});
