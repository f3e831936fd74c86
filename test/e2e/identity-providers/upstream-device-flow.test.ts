import { setTimeout as sleep } from 'node:timers/promises';
import { decodeJwt } from 'jose';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEVICE_GRANT, pollDeviceToken, startDeviceAuthorization } from '../../factories/device-flow.factory.js';
import { ALICE, createSignInClient, heading, linkedUser, newKek, nextCallback, registerProvider } from '../../factories/upstream.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

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

    // The device keeps to its 1 s interval since its first poll (a quick sign-in would be slow_down).
    await sleep(1_000);
    const polled = await pollDeviceToken(app, client, authorization.device_code);
    expect(polled.status).toBe(200);
    expect(decodeJwt(polled.body.access_token as string)).toMatchObject({ sub: (await linkedUser(app, 'corp', ALICE.sub)).id, client_id: client.id, scope: 'voyages:read' });
  });

  it('begins a browser session with the brokered sign-in: the next code asks "Continue as alice" instead of going to the provider, its ID token has the same sign-in, and a client that does not take her asks to sign in', async () => {
    const client = await createSignInClient(app, ['corp'], { grants: [DEVICE_GRANT] });
    context = await browser.newContext({ javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    const enterCode = async (authorization: { verification_uri: string; user_code: string }) => {
      await page.goto(authorization.verification_uri);
      await page.getByLabel('Code').fill(authorization.user_code);
      await page.getByRole('button', { name: 'Continue' }).click();
    };

    const first = await startDeviceAuthorization(app, client, { scope: 'openid' });
    const callback = nextCallback(page);
    await enterCode(first);
    await signInAtUpstream(page, { username: 'alice', password: ALICE.password });
    await callback;
    await page.getByRole('button', { name: 'Approve' }).click();
    expect(await heading(page)).toBe('Device connected');
    expect((await context.cookies()).find((cookie) => cookie.name === 'vc_session')).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });

    const second = await startDeviceAuthorization(app, client, { scope: 'openid' });
    await enterCode(second);
    expect(new URL(page.url()).origin).toBe(app.baseUrl);
    expect(await heading(page)).toBe('Choose an account');
    expect(await page.getByText('You are signed in as').textContent()).toBe('You are signed in as alice with Corp SSO.');
    await page.getByRole('button', { name: 'Continue as alice' }).click();
    expect(await heading(page)).toBe(`Connect ${client.name}?`);
    await page.getByRole('button', { name: 'Approve' }).click();
    expect(await heading(page)).toBe('Device connected');

    const idTokens = await Promise.all([first, second].map(async ({ device_code }) => decodeJwt((await pollDeviceToken(app, client, device_code)).body.id_token as string)));
    expect(idTokens[1]).toMatchObject({ sub: (await linkedUser(app, 'corp', ALICE.sub)).id, auth_time: idTokens[0].auth_time, sid: idTokens[0].sid });
    expect(idTokens[0].sid).toEqual(expect.any(String));

    // Her session is no way into a client whose users sign in with a password here.
    const local = await createSignInClient(app, ['local'], { grants: [DEVICE_GRANT] });
    await enterCode(await startDeviceAuthorization(app, local));
    expect(await heading(page)).toBe('Sign in');
    expect(await page.getByRole('button', { name: /Continue as/ }).count()).toBe(0);
  });
});
