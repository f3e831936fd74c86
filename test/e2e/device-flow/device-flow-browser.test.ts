import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { DEVICE_GRANT } from '../../factories/device-flow.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { type PortalUser, userId } from '../../factories/token-flow.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { screenshotWidths } from '../../setup/screenshots.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// The device flow (RFC 8628) end to end with a device and a user nobody here wrote: openid-client
// v6 is the device (it starts the authorization and polls by itself, keeping to `interval` and
// growing it on `slow_down`), and the user drives the verification page in a real Chromium with
// JavaScript off, as a phone would show it.

const PHONE = { width: 390, height: 844 };
/** Screenshots for review (DEVICE_SCREENSHOTS_DIR=DIR: `<name>-390.png` and `<name>-1280.png`); unset, as in CI, nothing is written. */
const screenshot = (page: Page, name: string) => screenshotWidths(page, process.env.DEVICE_SCREENSHOTS_DIR, name);

/**
 * The device: openid-client configured by RFC 8414 discovery (plain http on 127.0.0.1 needs
 * allowInsecureRequests). Its fetch only records what each device-code poll was answered
 * (`error`, or 'tokens'); the library sees every response untouched.
 */
async function deviceClient(app: TestApp, client: TestClient, auth: typeof oidc.ClientSecretBasic) {
  const config = await oidc.discovery(new URL(app.baseUrl), client.id, undefined, auth(client.secret), {
    algorithm: 'oauth2',
    execute: [oidc.allowInsecureRequests],
  });
  const tokenEndpoint = config.serverMetadata().token_endpoint!;
  const polls: string[] = [];
  config[oidc.customFetch] = async (url, options) => {
    const response = await fetch(url, options);
    if (url === tokenEndpoint && new URLSearchParams(options.body as URLSearchParams).get('grant_type') === DEVICE_GRANT) {
      const body = (await response.clone().json()) as { error?: string };
      polls.push(body.error ?? 'tokens');
    }
    return response;
  };
  return { config, polls };
}

describe('the device flow with openid-client and the verification page in a real browser (JavaScript off)', () => {
  let app: TestApp;
  let browser: Browser;
  let device: TestClient;
  let deviceName: string;
  let user: PortalUser;
  let context: BrowserContext | undefined;
  let stopPolling: AbortController | undefined;

  beforeAll(async () => {
    // A 1 s interval keeps the test quick; openid-client waits it out between polls by itself.
    app = await startTestApp({ DEVICE_POLL_INTERVAL: '1' });
    device = await createClient(app, { grants: [DEVICE_GRANT, 'refresh_token'], scopes: ['voyages:read', 'reports:read'] });
    deviceName = (await app.get(ClientsService).show(device.id)).name;
    user = await createUser(app);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });
  afterEach(async () => {
    // A test that failed half-way must not leave the device polling a closed service.
    stopPolling?.abort();
    await context?.close();
    context = undefined;
  });

  /**
   * The device starts polling in the background and is told to wait before the user arrives.
   * Returns its outcome in an object: an async function returning the promise itself would wait for it.
   */
  async function startPolling(config: oidc.Configuration, polls: string[], authorization: oidc.DeviceAuthorizationResponse) {
    stopPolling = new AbortController();
    const outcome = oidc.pollDeviceAuthorizationGrant(config, authorization, undefined, { signal: stopPolling.signal });
    // Judged after the browser steps; a rejection before then must not count as unhandled.
    outcome.catch(() => {});
    await vi.waitFor(() => expect(polls).toContain('authorization_pending'), { timeout: 5_000, interval: 100 });
    return { outcome };
  }

  async function openPage(url: string): Promise<Page> {
    context = await browser.newContext({ javaScriptEnabled: false, viewport: PHONE });
    // A missing heading or alert fails the test with its locator, not the whole test's timeout.
    context.setDefaultTimeout(5_000);
    const page = await context.newPage();
    await page.goto(url);
    return page;
  }

  const heading = (page: Page) => page.getByRole('heading', { level: 1 }).textContent();

  async function signIn(page: Page, password = user.password) {
    await page.getByLabel('Username').fill(user.username);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  it('connects a device: code typed in lower case without the dash, a wrong password then the right one, Approve; the device gets its tokens and refreshes them', async () => {
    const scope = 'voyages:read reports:read';
    const { config, polls } = await deviceClient(app, device, oidc.ClientSecretBasic);
    const authorization = await oidc.initiateDeviceAuthorization(config, { scope });
    expect(authorization).toMatchObject({ verification_uri: `${app.baseUrl}/sso/device`, interval: 1 });
    const polling = await startPolling(config, polls, authorization);

    const page = await openPage(authorization.verification_uri);
    expect(await heading(page)).toBe('Connect a device');
    expect(await page.getByLabel('Code').inputValue()).toBe('');
    await screenshot(page, '1-code');

    // A typo first (last letter changed): refused, and what was typed is kept to correct.
    const code = authorization.user_code;
    const typo = `${code.slice(0, -1)}${code.endsWith('B') ? 'C' : 'B'}`.toLowerCase().replace('-', '');
    await page.getByLabel('Code').fill(typo);
    await page.getByRole('button', { name: 'Continue' }).click();
    expect(await heading(page)).toBe('Connect a device');
    expect(await page.getByRole('alert').textContent()).toBe(`No device is waiting for the code ${typo.toUpperCase().slice(0, 4)}-${typo.toUpperCase().slice(4)}. Check the code on your device.`);
    expect(await page.getByLabel('Code').inputValue()).toBe(typo);
    await screenshot(page, '1-code-error');

    await page.getByLabel('Code').fill(code.toLowerCase().replace('-', ''));
    await page.getByRole('button', { name: 'Continue' }).click();
    expect(await heading(page)).toBe('Sign in');
    // The user sees what they are connecting, and the code as their device shows it.
    expect(await page.locator('main > p').first().textContent()).toBe(`Use your voyage-planning portal account to connect ${deviceName} with the code ${code}.`);
    await screenshot(page, '2-sign-in');

    await signIn(page, 'not the password');
    expect(await heading(page)).toBe('Sign in');
    expect(await page.getByRole('alert').textContent()).toBe('Wrong username or password.');
    expect(await page.getByLabel('Username').inputValue()).toBe(user.username);
    expect(await page.getByLabel('Password').inputValue()).toBe('');
    await screenshot(page, '2-sign-in-error');

    await signIn(page);
    expect(await heading(page)).toBe(`Connect ${deviceName}?`);
    expect(await page.getByText('You are signed in as').textContent()).toBe(`You are signed in as ${user.username}.`);
    expect(await page.getByRole('listitem').allTextContents()).toEqual(scope.split(' '));
    expect(await page.getByText('Approve only if').textContent()).toBe('Approve only if you started this on your device and it shows this code:');
    expect(await page.locator('p.code').textContent()).toBe(code);
    await screenshot(page, '3-approval');
    // Nothing is decided until the user clicks.
    expect(polls).not.toContain('tokens');

    await page.getByRole('button', { name: 'Approve' }).click();
    expect(await heading(page)).toBe('Device connected');
    expect(await page.locator('main > p').textContent()).toBe(`${deviceName} is now signed in as ${user.username}. Return to your device: it will finish by itself.`);
    await screenshot(page, '4-connected');

    const tokens = await polling.outcome;
    expect(tokens.scope).toBe(scope);
    expect(tokens.refresh_token).toEqual(expect.any(String));
    expect(decodeJwt(tokens.access_token)).toMatchObject({ sub: await userId(app, user), client_id: device.id, scope });
    // The device kept to the interval, so it was told to wait, never to slow down, until the tokens.
    expect(polls.at(-1)).toBe('tokens');
    expect(new Set(polls.slice(0, -1))).toEqual(new Set(['authorization_pending']));

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).toEqual(expect.any(String));
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(refreshed.scope).toBe(scope);
    expect(decodeJwt(refreshed.access_token)).toMatchObject({ sub: await userId(app, user), client_id: device.id, scope });
  });

  it('opens verification_uri_complete with the code filled in, still asks to continue, and Deny makes the device poll fail with access_denied', async () => {
    const { config, polls } = await deviceClient(app, device, oidc.ClientSecretPost);
    const authorization = await oidc.initiateDeviceAuthorization(config, {});
    expect(authorization.verification_uri_complete).toBe(`${app.baseUrl}/sso/device?user_code=${authorization.user_code}`);
    const polling = await startPolling(config, polls, authorization);

    const page = await openPage(authorization.verification_uri_complete!);
    // Filled in, not accepted: the user still confirms the code their device shows (RFC 8628 §3.3.1).
    expect(await heading(page)).toBe('Connect a device');
    expect(await page.getByLabel('Code').inputValue()).toBe(authorization.user_code);
    await page.getByRole('button', { name: 'Continue' }).click();
    expect(await heading(page)).toBe('Sign in');

    await signIn(page);
    expect(await heading(page)).toBe(`Connect ${deviceName}?`);
    // No scope was asked for, so the page says what the device gets without one.
    expect(await page.getByRole('listitem').count()).toBe(0);
    expect(await page.getByText('It asks to act for you on your account.').count()).toBe(1);

    await page.getByRole('button', { name: 'Deny' }).click();
    expect(await heading(page)).toBe('Request denied');
    expect(await page.locator('main > p').textContent()).toBe(`${deviceName} was not connected to your account (${user.username}). You can close this page.`);
    await screenshot(page, '4-denied');

    // openid-client stops polling and surfaces the token endpoint's RFC 8628 §3.5 error.
    await expect(polling.outcome).rejects.toBeInstanceOf(oidc.ResponseBodyError);
    await expect(polling.outcome).rejects.toMatchObject({ error: 'access_denied', status: 400 });
    expect(polls.at(-1)).toBe('access_denied');
    expect(polls).not.toContain('slow_down');
  });
});
