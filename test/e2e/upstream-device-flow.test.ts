import { decodeJwt } from 'jose';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEVICE_GRANT, pollDeviceToken, startDeviceAuthorization } from '../factories/device-flow.factory.js';
import { ALICE, createSignInClient, heading, linkedUser, newKek, nextCallback, registerProvider } from '../factories/upstream.factory.js';
import { launchChromium } from '../setup/chromium.js';
import { startTestApp, type TestApp } from '../setup/test-app.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../setup/upstream/upstream-provider.js';

// The device flow (RFC 8628) for a client whose users sign in through the portal's identity
// provider: the verification page sends the browser there after the code, and the approval
// follows the provider's sign-in as it follows a local one.

describe('the device flow through a real identity provider', () => {
  let app: TestApp;
  let upstream: UpstreamProvider;
  let browser: Browser;
  let context: BrowserContext | undefined;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek(), DEVICE_POLL_INTERVAL: '1' });
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

  it("goes from the code straight to the provider (303), shows the provider's preferred_username on the approval page, and the device's poll gets tokens for the linked user", async () => {
    const client = await createSignInClient(app, ['corp'], { grants: [DEVICE_GRANT, 'refresh_token'], scopes: ['voyages:read'] });
    const authorization = await startDeviceAuthorization(app, client, { scope: 'voyages:read' });
    expect((await pollDeviceToken(app, client, authorization.device_code)).body).toMatchObject({ error: 'authorization_pending' });

    context = await browser.newContext({ javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    await page.goto(authorization.verification_uri);
    await page.getByLabel('Code').fill(authorization.user_code);
    const submitted = page.waitForResponse((response) => response.request().method() === 'POST' && new URL(response.url()).pathname === '/sso/device');
    await page.getByRole('button', { name: 'Continue' }).click();
    const toProvider = await submitted;
    expect(toProvider.status()).toBe(303);
    expect(new URL(toProvider.headers().location).origin).toBe(upstream.issuer);

    const callback = nextCallback(page);
    await signInAtUpstream(page, { username: 'alice', password: ALICE.password });
    expect((await callback).status()).toBe(200);
    expect(await heading(page)).toBe(`Connect ${client.name}?`);
    expect(await page.locator('main p').first().textContent()).toBe('You are signed in as alice with Corp SSO.');
    expect(await page.locator('p.code').textContent()).toBe(authorization.user_code);

    await page.getByRole('button', { name: 'Approve' }).click();
    expect(await heading(page)).toBe('Device connected');
    expect(await page.locator('main p').textContent()).toBe(`${client.name} is now signed in as alice. Return to your device: it will finish by itself.`);

    const polled = await pollDeviceToken(app, client, authorization.device_code);
    expect(polled.status).toBe(200);
    expect(decodeJwt(polled.body.access_token as string)).toMatchObject({ sub: (await linkedUser(app, 'corp', ALICE.sub)).id, client_id: client.id, scope: 'voyages:read' });
  });
});
