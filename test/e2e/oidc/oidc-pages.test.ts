import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { createUser } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { startDeviceCallback } from '../../factories/upstream.factory.js';
import { LOOPBACK_PATTERN, pkcePair } from '../../factories/token-flow.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { screenshotWidths } from '../../setup/screenshots.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// The pages of the OpenID Connect provider as a person sees them in Chromium without JavaScript:
// the login page of a standard request, "Continue as USER" within a session, and logout's
// "Sign out?" and "You're signed out" (or the app's own address), the home page, each under the
// portal's name and logo. OIDC_SCREENSHOTS_DIR=DIR writes each at 390 and 1280 px.

const PORTAL_NAME = 'Northwind Fleet Portal';
const LOGO_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64"><rect width="64" height="64" rx="14" fill="#0b5cad"/><text x="32" y="42" font-family="sans-serif" font-size="26" font-weight="700" text-anchor="middle" fill="#fff">NF</text></svg>';

const screenshot = (page: Page, name: string) => screenshotWidths(page, process.env.OIDC_SCREENSHOTS_DIR, name);

describe('the OpenID Connect pages in a browser', () => {
  let app: TestApp;
  let browser: Browser;
  let context: BrowserContext;
  let clientId: string;
  /** The app's redirect URI: a real server (a route would not see the redirect after a form's POST). */
  let appCallback: Awaited<ReturnType<typeof startDeviceCallback>>;
  const { challenge } = pkcePair();

  let logoDir: string;

  beforeAll(async () => {
    logoDir = await mkdtemp(join(tmpdir(), 'voyage-connect-logo-'));
    await writeFile(join(logoDir, 'logo.svg'), LOGO_SVG);
    const portal = { PORTAL_NAME, PORTAL_LOGO_FILE: join(logoDir, 'logo.svg') };
    [app, browser, appCallback] = await Promise.all([startTestApp(portal), launchChromium(), startDeviceCallback()]);
    const created = await app.get(ClientsService).create({ name: 'Voyage Planner', redirectPatterns: [LOOPBACK_PATTERN], postLogoutRedirectUris: [appCallback.url] });
    clientId = created.client_id;
  });
  afterAll(async () => {
    await appCallback?.close();
    await browser?.close();
    await app?.close();
    await rm(logoDir, { recursive: true, force: true });
  });
  afterEach(async () => context?.close());

  const standard = (params: Record<string, string> = {}) =>
    `${app.baseUrl}/sso/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: appCallback.url, scope: 'openid profile', state: 's', code_challenge: challenge, code_challenge_method: 'S256', ...params })}`;

  /** A browser without JavaScript that signed in through a standard request (the redirect to the app is not followed). */
  async function signedInPage(): Promise<Page> {
    context = await browser.newContext({ javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    await page.goto(standard({ login_hint: 'alice' }));
    await screenshot(page, 'oidc-login');
    const user = await createUser(app);
    await page.getByLabel('Username').fill(user.username);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect(await page.textContent('body')).toBe('device got the answer');
    return page;
  }

  it('shows the standard request’s login page with the app’s name and the login_hint, and signs in', async () => {
    context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(standard({ login_hint: 'alice' }));
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign in');
    expect(await page.locator('main').textContent()).toContain('Voyage Planner');
    expect(await page.getByLabel('Username').inputValue()).toBe('alice');
    await context.close();
    await signedInPage();
  });

  it('asks "Continue as USER" for the helper’s link within a session, and "Use another account" shows the form', async () => {
    const page = await signedInPage();
    await page.goto((await issueState(app, clientId)).authorize_url);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Continue to Voyage Planner?');
    expect(await page.getByRole('button', { name: /^Continue as / }).isVisible()).toBe(true);
    await screenshot(page, 'oidc-continue-as');
    await page.getByRole('button', { name: 'Use another account' }).click();
    expect(await page.getByLabel('Password').isVisible()).toBe(true);
  });

  it('asks "Sign out?" at logout without an ID token, offers to stay signed in, and says "You\'re signed out" after the click', async () => {
    const page = await signedInPage();
    await page.goto(`${app.baseUrl}/sso/logout`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign out?');
    await screenshot(page, 'oidc-sign-out');
    // A way back: "Stay signed in" leads to the home page, and the session is kept (logout asks again).
    await page.getByRole('link', { name: 'Stay signed in' }).click();
    expect(page.url()).toBe(`${app.baseUrl}/`);
    await page.goto(`${app.baseUrl}/sso/logout`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign out?');
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe("You're signed out");
    await screenshot(page, 'oidc-signed-out');
  });

  it('goes on to the address the app registered, with its state, after "Sign out?"', async () => {
    const page = await signedInPage();
    await page.goto(`${app.baseUrl}/sso/logout?${new URLSearchParams({ client_id: clientId, post_logout_redirect_uri: appCallback.url, state: 'bye' })}`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign out?');
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(page.url()).toBe(`${appCallback.url}?state=bye`);
    expect(await page.textContent('body')).toBe('device got the answer');
  });

  it('answers / with a page naming the service, and links to connect a device, to the documentation and to health', async () => {
    context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    const response = await page.goto(`${app.baseUrl}/`);
    expect(response!.status()).toBe(200);
    expect(response!.headers()['content-type']).toBe('text/html; charset=utf-8');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign-in for devices and applications');
    expect(await page.locator('main > p').first().textContent()).toContain(`with your ${PORTAL_NAME} account`);
    await screenshot(page, 'home');
    for (const [name, path] of [['API documentation', '/docs'], ['Service health', '/health'], ['Connect a device with its code', '/sso/device']]) {
      expect(await page.getByRole('link', { name }).getAttribute('href'), name).toBe(path);
    }
    expect((await fetch(`${app.baseUrl}/docs`)).status).toBe(200);
    await page.getByRole('link', { name: 'Connect a device with its code' }).click();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Connect a device');
  });

  it("names the portal and shows its logo on every page, the logo served with its type, a validator and a day's caching", async () => {
    context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    const logos: { status: number; type: string }[] = [];
    page.on('response', (response) => {
      if (new URL(response.url()).pathname === '/portal/logo') logos.push({ status: response.status(), type: response.headers()['content-type'] });
    });
    const pages = [standard(), `${app.baseUrl}/sso/device`, `${app.baseUrl}/sso/logout/done`, `${app.baseUrl}/sso/nowhere`, `${app.baseUrl}/`];
    for (const url of pages) {
      await page.goto(url);
      await page.waitForLoadState('load');
      expect(await page.locator('header.portal').textContent(), url).toBe(PORTAL_NAME);
      expect(await page.title(), url).toMatch(new RegExp(` – ${PORTAL_NAME}$`));
      expect(await page.locator('header.portal img').getAttribute('src'), url).toMatch(/^\/portal\/logo\?v=[\w-]+$/);
    }
    // The browser loaded it on each page (the pages' Content-Security-Policy allows it), or from its cache.
    expect(logos.length).toBeGreaterThan(0);
    expect(logos.every((logo) => logo.status === 200 && logo.type === 'image/svg+xml')).toBe(true);
    await screenshot(page, 'home-with-logo');

    const logo = await fetch(`${app.baseUrl}/portal/logo`);
    expect(logo.status).toBe(200);
    expect(logo.headers.get('content-type')).toBe('image/svg+xml');
    expect(logo.headers.get('cache-control')).toBe('public, max-age=86400');
    expect(logo.headers.get('content-security-policy')).toContain('sandbox');
    expect(await logo.text()).toBe(LOGO_SVG);
    const again = await fetch(`${app.baseUrl}/portal/logo`, { headers: { 'if-none-match': logo.headers.get('etag')! } });
    expect(again.status).toBe(304);
  });
});
