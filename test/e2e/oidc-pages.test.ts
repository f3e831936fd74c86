import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../src/clients/clients.service.js';
import { createUser } from '../factories/oauth.factory.js';
import { issueState } from '../factories/state.factory.js';
import { startDeviceCallback } from '../factories/upstream.factory.js';
import { LOOPBACK_PATTERN, pkcePair } from '../factories/token-flow.factory.js';
import { launchChromium } from '../setup/chromium.js';
import { screenshotWidths } from '../setup/screenshots.js';
import { startTestApp, type TestApp } from '../setup/test-app.js';

// The pages of the OpenID Connect provider as a person sees them in Chromium without JavaScript:
// the login page of a standard request, "Continue as USER" within a session, and logout's
// "Sign out?" and "You're signed out" (or the app's own address). OIDC_SCREENSHOTS_DIR=DIR writes each at 390 and 1280 px.

const screenshot = (page: Page, name: string) => screenshotWidths(page, process.env.OIDC_SCREENSHOTS_DIR, name);

describe('the OpenID Connect pages in a browser', () => {
  let app: TestApp;
  let browser: Browser;
  let context: BrowserContext;
  let clientId: string;
  /** The app's redirect URI: a real server (a route would not see the redirect after a form's POST). */
  let appCallback: Awaited<ReturnType<typeof startDeviceCallback>>;
  const { challenge } = pkcePair();

  beforeAll(async () => {
    [app, browser, appCallback] = await Promise.all([startTestApp({}), launchChromium(), startDeviceCallback()]);
    const created = await app.get(ClientsService).create({ name: 'Voyage Planner', redirectPatterns: [LOOPBACK_PATTERN], postLogoutRedirectUris: [appCallback.url] });
    clientId = created.client_id;
  });
  afterAll(async () => {
    await appCallback?.close();
    await browser?.close();
    await app?.close();
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

  it('asks "Sign out?" at logout without an ID token, and says "You\'re signed out" after the click', async () => {
    const page = await signedInPage();
    await page.goto(`${app.baseUrl}/sso/logout`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign out?');
    await screenshot(page, 'oidc-sign-out');
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
});
