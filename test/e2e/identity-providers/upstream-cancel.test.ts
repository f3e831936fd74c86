import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEVICE_GRANT, pollDeviceToken, startDeviceAuthorization } from '../../factories/device-flow.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { LOOPBACK_PATTERN } from '../../factories/token-flow.factory.js';
import { ALICE, createSignInClient, heading, issuedRows, newKek, registerProvider, startDeviceCallback } from '../../factories/upstream.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { cancelAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

// The user presses Cancel on the provider's sign-in page: the provider answers
// error=access_denied, the page says the sign-in was cancelled, and each kind of device is told
// access_denied in its own way.

describe('a sign-in cancelled at the identity provider', () => {
  let app: TestApp;
  let upstream: UpstreamProvider;
  let browser: Browser;
  let context: BrowserContext | undefined;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek(), CODE_POLL_MIN_INTERVAL: '0', DEVICE_POLL_INTERVAL: '1' });
    [upstream, browser] = await Promise.all([startUpstreamProvider({ accounts: [ALICE] }), launchChromium()]);
    await registerProvider(app, upstream, 'corp', 'Corp SSO');
  });
  afterAll(async () => {
    await browser?.close();
    await upstream?.stop();
    await app?.close();
  });
  afterEach(async () => {
    await context?.close();
    context = undefined;
  });

  async function openPage(url: string): Promise<Page> {
    context = await browser.newContext({ javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    await page.goto(url);
    return page;
  }

  it('sends a device waiting at its redirect_url error=access_denied with its state, and no code', async () => {
    const device = await startDeviceCallback();
    try {
      const client = await createSignInClient(app, ['corp'], { redirectPatterns: [LOOPBACK_PATTERN] });
      const config = await issueState(app, client.id, { redirect_url: device.url });
      const page = await openPage(config.authorize_url);
      await cancelAtUpstream(page);

      expect(await page.textContent('body')).toBe('device got the answer');
      expect(device.received).toHaveLength(1);
      expect(Object.fromEntries(device.received[0].searchParams)).toEqual({ error: 'access_denied', state: config.state, iss: app.baseUrl });
    } finally {
      await device.close();
    }
  });

  it('tells the user the sign-in was cancelled, and a polling device gets 400 access_denied at code_url from then on', async () => {
    const client = await createSignInClient(app, ['corp']);
    const config = await issueState(app, client.id);
    expect((await fetch(config.code_url)).status).toBe(404);
    const before = await issuedRows(app);
    const page = await openPage(config.authorize_url);
    await cancelAtUpstream(page);

    expect(await heading(page)).toBe('Sign-in cancelled');
    expect(await page.locator('main p').textContent()).toBe(`${client.name} was not signed in. Return to your device: it will tell you the sign-in was cancelled.`);
    for (let poll = 0; poll < 2; poll++) {
      const response = await fetch(config.code_url);
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: 'access_denied' });
    }
    // The link is spent: opening it again does not start another sign-in.
    expect((await fetch(config.authorize_url, { redirect: 'manual' })).status).toBe(400);
    expect(await issuedRows(app)).toMatchObject({ authorization_codes: before.authorization_codes, grants: before.grants, upstream_sessions: before.upstream_sessions });
  });

  it('tells the user the sign-in was cancelled, and the RFC 8628 device is answered access_denied', async () => {
    const client = await createSignInClient(app, ['corp'], { grants: [DEVICE_GRANT] });
    const authorization = await startDeviceAuthorization(app, client);
    const page = await openPage(authorization.verification_uri);
    await page.getByLabel('Code').fill(authorization.user_code);
    await page.getByRole('button', { name: 'Continue' }).click();
    await cancelAtUpstream(page);

    expect(await heading(page)).toBe('Sign-in cancelled');
    expect(await page.locator('main p').textContent()).toBe('The device was not connected. It will tell you the sign-in was cancelled; you can close this page.');
    const polled = await pollDeviceToken(app, client, authorization.device_code);
    expect(polled.status).toBe(400);
    expect(polled.body).toMatchObject({ error: 'access_denied' });
  });
});
