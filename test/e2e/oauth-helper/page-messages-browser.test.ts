import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { UsersService } from '../../../src/users/users.service.js';
import { DEVICE_GRANT, startDeviceAuthorization } from '../../factories/device-flow.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import type { PortalUser } from '../../factories/token-flow.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { screenshotWidths } from '../../setup/screenshots.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// What the pages say, read in a real Chromium with JavaScript off, for each thing that can go
// wrong or right: each message names its cause, the device and the account.

const PHONE = { width: 390, height: 844 };
/** Screenshots for review (PAGES_SCREENSHOTS_DIR=DIR: `<name>-390.png` and `<name>-1280.png`); unset, as in CI, nothing is written. */
const screenshot = (page: Page, name: string) => screenshotWidths(page, process.env.PAGES_SCREENSHOTS_DIR, name);

describe('what the sign-in and device pages tell the user, in a real browser (JavaScript off)', () => {
  let app: TestApp;
  let browser: Browser;
  let context: BrowserContext;
  let tv: TestClient;
  let tvName: string;
  let user: PortalUser;

  beforeAll(async () => {
    app = await startTestApp();
    tvName = `Bridge display ${process.pid}`;
    const created = await app.get(ClientsService).create({
      name: tvName,
      grants: [DEVICE_GRANT],
      scopes: ['voyages:read', 'reports:read'],
      scopeDescriptions: { 'voyages:read': 'See your voyages, their routes and their port calls' },
    });
    tv = { id: created.client_id, secret: created.client_secret };
    user = await createUser(app);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });
  afterEach(() => context?.close());

  async function newTab(url: string): Promise<Page> {
    context ??= await browser.newContext({ javaScriptEnabled: false, viewport: PHONE });
    context.setDefaultTimeout(5_000);
    const page = await context.newPage();
    await page.goto(url);
    return page;
  }
  /** A fresh browser (its own cookies) for each test. */
  async function openPage(url: string): Promise<Page> {
    context = await browser.newContext({ javaScriptEnabled: false, viewport: PHONE });
    return newTab(url);
  }

  const heading = (page: Page) => page.getByRole('heading', { level: 1 }).textContent();
  const alert = (page: Page) => page.getByRole('alert').textContent();
  const paragraphs = (page: Page) => page.locator('main > p').allTextContents();

  async function enterCode(page: Page, code: string) {
    await page.getByLabel('Code').fill(code);
    await page.getByRole('button', { name: 'Continue' }).click();
  }
  async function signIn(page: Page, who: PortalUser = user) {
    await page.getByLabel('Username').fill(who.username);
    await page.getByLabel('Password').fill(who.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  it('says how many characters a code too short has, instead of calling it wrong or expired', async () => {
    const page = await openPage(`${app.baseUrl}/sso/device`);
    await enterCode(page, 'bcdf');
    expect(await alert(page)).toBe('That code has 4 characters, but a code has 8 letters. Check the code on your device.');
    expect(await page.getByLabel('Code').inputValue()).toBe('bcdf');
    await screenshot(page, 'code-too-short');
    await enterCode(page, 'BCDF-GHJ0');
    expect(await alert(page)).toBe('A code never has "0". Check the code on your device.');
  });

  it('tells a code nobody is waiting for from one that expired', async () => {
    const page = await openPage(`${app.baseUrl}/sso/device`);
    await enterCode(page, 'bcdf-ghjk');
    expect(await alert(page)).toBe('No device is waiting for the code BCDF-GHJK. Check the code on your device.');
    const expired = await startDeviceAuthorization(app, tv);
    await query(app.databaseUrl, `UPDATE device_codes SET expires_at = now() - interval '1 second' WHERE user_code = $1`, [expired.user_code.replace('-', '')]);
    await enterCode(page, expired.user_code);
    expect(await alert(page)).toBe(`The code ${expired.user_code} has expired. Start again on your device to get a new one.`);
  });

  it('asks to sign in with the portal account, shows the scopes as the operator described them, and names the device and the account once connected', async () => {
    const authorization = await startDeviceAuthorization(app, tv, { scope: 'voyages:read reports:read' });
    const page = await openPage(authorization.verification_uri_complete);
    await page.getByRole('button', { name: 'Continue' }).click();
    expect(await heading(page)).toBe('Sign in');
    expect((await paragraphs(page))[0]).toBe(`Use your voyage-planning portal account to connect ${tvName} with the code ${authorization.user_code}.`);
    await screenshot(page, 'device-sign-in');

    await signIn(page);
    expect(await heading(page)).toBe(`Connect ${tvName}?`);
    expect(await page.getByRole('listitem').allTextContents()).toEqual(['See your voyages, their routes and their port calls', 'reports:read']);
    // A scope without a description is shown as what it is: a name, in code style.
    expect(await page.getByRole('listitem').nth(1).locator('code').textContent()).toBe('reports:read');
    await screenshot(page, 'device-approval');

    await page.getByRole('button', { name: 'Approve' }).click();
    expect(await heading(page)).toBe('Device connected');
    expect(await paragraphs(page)).toEqual([`${tvName} is now signed in as ${user.username}. Return to your device: it will finish by itself.`]);
    await screenshot(page, 'device-connected');
  });

  it('wraps a long client name, an unbroken scope name and long descriptions within a phone\'s width', async () => {
    const longName = `Engine room condition monitoring display of MV Nordic Star ${process.pid}`;
    const created = await app.get(ClientsService).create({
      name: longName,
      grants: [DEVICE_GRANT],
      scopes: ['voyages:read', 'urn:voyage-planning:scope:engine-room-telemetry:read-and-acknowledge-alarms'],
      scopeDescriptions: { 'voyages:read': `See your voyages, their routes, their port calls, ${'and the noon reports of every leg '.repeat(4).trim()}` },
    });
    const authorization = await startDeviceAuthorization(app, { id: created.client_id, secret: created.client_secret }, { scope: created.scopes.join(' ') });
    const page = await openPage(authorization.verification_uri_complete);
    await page.getByRole('button', { name: 'Continue' }).click();
    await signIn(page);
    expect(await heading(page)).toBe(`Connect ${longName}?`);
    for (const item of [page.getByRole('heading', { level: 1 }), ...(await page.getByRole('listitem').all())]) {
      const box = (await item.boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
    }
    await screenshot(page, 'device-approval-long');
  });

  it('names the account on the denied page', async () => {
    const authorization = await startDeviceAuthorization(app, tv);
    const page = await openPage(authorization.verification_uri_complete);
    await page.getByRole('button', { name: 'Continue' }).click();
    await signIn(page);
    await page.getByRole('button', { name: 'Deny' }).click();
    expect(await heading(page)).toBe('Request denied');
    expect(await paragraphs(page)).toEqual([`${tvName} was not connected to your account (${user.username}). You can close this page.`]);
    await screenshot(page, 'device-denied');
  });

  it('says a code approved in another tab was already approved (as good news, not as an error), and one denied there was denied', async () => {
    for (const [decision, message] of [
      ['Approve', (code: string) => `The code ${code} was already approved, perhaps in another tab: the device is connected. You can close this page.`],
      ['Deny', (code: string) => `The code ${code} was already denied, perhaps in another tab: the device was not connected. To connect it, start again on your device.`],
    ] as const) {
      const authorization = await startDeviceAuthorization(app, tv);
      const first = await openPage(authorization.verification_uri_complete);
      await first.getByRole('button', { name: 'Continue' }).click();
      const second = await newTab(authorization.verification_uri_complete);
      await second.getByRole('button', { name: 'Continue' }).click();
      await signIn(second);
      await second.getByRole('button', { name: decision }).click();

      // The stale tab still shows the sign-in form; the user signs in there too.
      await signIn(first);
      expect(await heading(first)).toBe('Connect a device');
      if (decision === 'Approve') {
        // Nothing went wrong: a status, not an alert, in the notice's colours rather than the error's.
        expect(await first.getByRole('alert').count()).toBe(0);
        expect(await first.getByRole('status').textContent()).toBe(message(authorization.user_code));
        expect(await first.locator('p.notice').count()).toBe(1);
      } else {
        expect(await alert(first)).toBe(message(authorization.user_code));
      }
      expect(await first.getByLabel('Code').inputValue()).toBe('');
      if (decision === 'Approve') await screenshot(first, 'code-already-approved');
      await context.close();
    }
  });

  it('says the request was cancelled when the account that signed in was disabled before it approved', async () => {
    const doomed = await createUser(app);
    const authorization = await startDeviceAuthorization(app, tv);
    const page = await openPage(authorization.verification_uri_complete);
    await page.getByRole('button', { name: 'Continue' }).click();
    await signIn(page, doomed);
    expect(await heading(page)).toBe(`Connect ${tvName}?`);
    await app.get(UsersService).disable(doomed.username);

    await page.getByRole('button', { name: 'Approve' }).click();
    expect(await heading(page)).toBe('Connect a device');
    expect(await alert(page)).toBe(`The request with the code ${authorization.user_code} was cancelled: the account that signed in for it has been disabled.`);
    await screenshot(page, 'code-cancelled');
  });

  it('says which application a disabled client\'s code is for', async () => {
    const kiosk = await createClient(app, { grants: [DEVICE_GRANT] });
    const kioskName = (await app.get(ClientsService).show(kiosk.id)).name;
    const authorization = await startDeviceAuthorization(app, kiosk);
    await app.get(ClientsService).setEnabled(kiosk.id, false);
    const page = await openPage(authorization.verification_uri_complete);
    await page.getByRole('button', { name: 'Continue' }).click();
    expect(await alert(page)).toBe(`The code ${authorization.user_code} is for ${kioskName}, which an administrator has disabled: it cannot be connected.`);
  });

  it('asks to sign in with the portal account on the login page, and names the application and the account once signed in', async () => {
    const helperClient = await app.get(ClientsService).create({ name: `Chart plotter ${process.pid}` });
    const { authorize_url } = await issueState(app, helperClient.client_id);
    const page = await openPage(authorize_url);
    expect(await heading(page)).toBe('Sign in');
    expect((await paragraphs(page))[0]).toBe(`Use your voyage-planning portal account to continue to ${helperClient.name}.`);
    await screenshot(page, 'login');

    await signIn(page);
    expect(await heading(page)).toBe("You're signed in");
    expect(await paragraphs(page)).toEqual([`${helperClient.name} is now signed in as ${user.username}. Return to your device: it will finish signing in by itself.`]);
    await screenshot(page, 'login-signed-in');

    // The same link again, from the history or another tab.
    await page.goto(authorize_url);
    expect(await heading(page)).toBe('This sign-in link was already used');
    expect(await paragraphs(page)).toEqual(['This link has already been used to sign in. If your device is not signed in, start the sign-in again from your device.']);
    await screenshot(page, 'login-link-used');
  });
});
