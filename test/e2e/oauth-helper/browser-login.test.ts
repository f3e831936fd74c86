import { createServer, type Server } from 'node:http';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createClient, createUser } from '../../factories/oauth.factory.js';
import type { HelperConfigResponse as HelperConfig } from '../../factories/state.factory.js';
import { freePort } from '../../setup/free-port.js';
import { launchChromium } from '../../setup/chromium.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';


/** The device's own callback on the LAN: records what the browser brings back. */
async function startDeviceListener() {
  const port = await freePort();
  const received: URL[] = [];
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url!, `http://127.0.0.1:${port}`);
    if (url.pathname === '/callback') received.push(url); // the browser also asks for /favicon.ico
    response.end('device got the code');
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${port}/callback`, received, close: () => new Promise((resolve) => server.close(resolve)) };
}

async function exchange(app: TestApp, client: { id: string; secret: string }, code: string) {
  return fetch(`${app.baseUrl}/sso/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: client.id, client_secret: client.secret }),
  });
}

describe('the login page in a real browser (JavaScript off)', () => {
  let app: TestApp;
  let browser: Browser;
  let context: BrowserContext;

  beforeAll(async () => {
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0' });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  // A browser of its own per test: a sign-in leaves a session, and the next link would ask "Continue as USER".
  beforeEach(async () => {
    await context?.close();
    context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 390, height: 844 } });
  });

  it('signs in and lands on the device redirect URL with code and state', async () => {
    const device = await startDeviceListener();
    const client = await createClient(app, { redirectPatterns: ['http://127.0.0.0/8:*/callback'] });
    const user = await createUser(app);
    const config = (await (
      await fetch(`${app.baseUrl}/external/oauth2helper/config/${client.id}?redirect_url=${encodeURIComponent(device.url)}`, { method: 'POST' })
    ).json()) as HelperConfig;
    const state = new URL(config.authorize_url).searchParams.get('state');

    const page = await context.newPage();
    await page.goto(config.authorize_url);
    await page.getByLabel('Username').fill(user.username);
    await page.getByLabel('Password').fill(user.password);
    await Promise.all([page.waitForURL(`${device.url}?**`), page.getByRole('button', { name: 'Sign in' }).click()]);

    expect(await page.textContent('body')).toBe('device got the code');
    expect(device.received).toHaveLength(1);
    const callback = device.received[0];
    expect(callback.pathname).toBe('/callback');
    expect(callback.searchParams.get('state')).toBe(state);
    const response = await exchange(app, client, callback.searchParams.get('code')!);
    expect(response.status).toBe(200);
    await page.close();
    await device.close();
  });

  it('signs in for a polling device, tells the user to return to it, and the device collects the code', async () => {
    const client = await createClient(app);
    const user = await createUser(app);
    const config = (await (await fetch(`${app.baseUrl}/external/oauth2helper/config/${client.id}`, { method: 'POST' })).json()) as HelperConfig;

    const page = await context.newPage();
    await page.goto(config.authorize_url);
    await page.getByLabel('Username').fill(user.username);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect(await page.getByRole('alert').textContent()).toBe('Wrong username or password.');
    expect(await page.getByLabel('Username').inputValue()).toBe(user.username);
    await page.screenshot({ path: 'test-results/login-error.png' });
    expect((await fetch(config.code_url)).status).toBe(404);

    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect(await page.getByRole('heading').textContent()).toBe("You're signed in");
    await page.screenshot({ path: 'test-results/login-done.png' });

    const poll = await fetch(config.code_url);
    expect(poll.status).toBe(200);
    const { code } = (await poll.json()) as { code: string };
    expect((await exchange(app, client, code)).status).toBe(200);
    await page.close();
  });

  it('shows an error page, not a redirect, for a tampered sign-in link', async () => {
    const client = await createClient(app, { redirectPatterns: ['http://127.0.0.0/8:*/callback'] });
    const config = (await (
      await fetch(`${app.baseUrl}/external/oauth2helper/config/${client.id}?redirect_url=${encodeURIComponent('http://127.0.0.1:9/callback')}`, {
        method: 'POST',
      })
    ).json()) as HelperConfig;
    const tampered = new URL(config.authorize_url);
    tampered.searchParams.set('state', `${tampered.searchParams.get('state')}x`);

    const page = await context.newPage();
    const response = await page.goto(tampered.href);
    expect(response!.status()).toBe(400);
    expect(page.url()).toBe(tampered.href);
    expect(await page.getByRole('heading').textContent()).toBe('This sign-in link does not work');
    await page.close();
  });
});
