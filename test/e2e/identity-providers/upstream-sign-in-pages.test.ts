import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEVICE_GRANT, startDeviceAuthorization } from '../../factories/device-flow.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { ALICE, confirmSignIn, createSignInClient, heading, newKek, registerProvider } from '../../factories/upstream.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { query } from '../../setup/database.js';
import { screenshotWidths } from '../../setup/screenshots.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

// The sign-in pages of a client whose users may sign in locally or through either of two
// identity providers: a button per provider, then the username and password form; each button
// leads to its own provider. Real Chromium with JavaScript off, as a phone would show them.

const PHONE = { width: 390, height: 844 };
/** Screenshots for review (UPSTREAM_SCREENSHOTS_DIR=DIR: `<name>-390.png` and `<name>-1280.png`); unset, as in CI, nothing is written. */
const screenshot = (page: Page, name: string) => screenshotWidths(page, process.env.UPSTREAM_SCREENSHOTS_DIR, name);

describe('sign-in pages offering two identity providers and the local form', () => {
  let app: TestApp;
  let corp: UpstreamProvider;
  let partner: UpstreamProvider;
  let browser: Browser;
  let context: BrowserContext | undefined;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek() });
    [corp, partner, browser] = await Promise.all([startUpstreamProvider({ accounts: [ALICE] }), startUpstreamProvider({ accounts: [ALICE] }), launchChromium()]);
    await registerProvider(app, corp, 'corp', 'Corp SSO');
    await registerProvider(app, partner, 'partner', 'Partner Login');
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([corp?.stop(), partner?.stop()]);
    await app?.close();
  });
  afterEach(async () => {
    await context?.close();
    context = undefined;
  });

  async function openPage(url: string): Promise<Page> {
    context = await browser.newContext({ javaScriptEnabled: false, viewport: PHONE });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    await page.goto(url);
    return page;
  }

  /** The choices the page offers: each provider button's value and text, and whether the username and password form is there. */
  async function choices(page: Page) {
    const buttons = await page.locator('button[name="idp"]').evaluateAll((elements) => elements.map((button) => [button.getAttribute('value'), button.textContent]));
    const local = (await page.getByLabel('Username').isVisible()) && (await page.getByLabel('Password').isVisible()) && (await page.getByRole('button', { name: 'Sign in' }).isVisible());
    return { buttons, local };
  }

  it('/sso/authorize shows a button named idp per provider, by display name, then the username and password form; a button leads to its provider', async () => {
    const client = await createSignInClient(app, ['corp', 'partner', 'local']);
    const page = await openPage((await issueState(app, client.id)).authorize_url);
    expect(await heading(page)).toBe('Sign in');
    expect(await choices(page)).toEqual({ buttons: [['corp', 'Corp SSO'], ['partner', 'Partner Login']], local: true });
    // The password form says whose password it takes: not the providers'.
    expect(await page.locator('main p.divider').textContent()).toBe('or with your voyage-planning portal account');
    await screenshot(page, 'authorize-sign-in');

    await page.getByRole('button', { name: 'Partner Login' }).click();
    expect(new URL(page.url()).origin).toBe(partner.issuer);
    await signInAtUpstream(page, { username: 'alice', password: ALICE.password });
    await screenshot(page, 'authorize-continue');
    await confirmSignIn(page);
    expect(await heading(page)).toBe("You're signed in");
  });

  it("the device flow's sign-in step shows the same choices, and a button leads to its provider and on to the approval", async () => {
    const client = await createSignInClient(app, ['local', 'corp', 'partner'], { grants: [DEVICE_GRANT] });
    const authorization = await startDeviceAuthorization(app, client);
    const page = await openPage(authorization.verification_uri);
    await page.getByLabel('Code').fill(authorization.user_code);
    await page.getByRole('button', { name: 'Continue' }).click();
    expect(await heading(page)).toBe('Sign in');
    expect(await page.locator('main > p').first().textContent()).toBe(`Choose how to sign in to connect ${client.name} with the code ${authorization.user_code}.`);
    expect(await choices(page)).toEqual({ buttons: [['corp', 'Corp SSO'], ['partner', 'Partner Login']], local: true });
    // The password form says whose password it takes: not the providers'.
    expect(await page.locator('main p.divider').textContent()).toBe('or with your voyage-planning portal account');
    await screenshot(page, 'device-sign-in');

    await page.getByRole('button', { name: 'Corp SSO' }).click();
    expect(new URL(page.url()).origin).toBe(corp.issuer);
    await signInAtUpstream(page, { username: 'alice', password: ALICE.password });
    expect(await heading(page)).toBe(`Connect ${client.name}?`);
    await screenshot(page, 'device-approval');
  });
  it('says sign-in is not available, rather than showing no way in, when the only provider of a client is gone', async () => {
    await registerProvider(app, corp, 'gone', 'Gone SSO');
    const client = await createSignInClient(app, ['gone']);
    // idp:delete refuses while a client uses the provider; a deletion racing with client:update is what remains.
    await query(app.databaseUrl, "DELETE FROM identity_providers WHERE name = 'gone'");
    const page = await openPage((await issueState(app, client.id)).authorize_url);
    expect(await heading(page)).toBe('Sign-in is not available');
    expect(await page.locator('main p').textContent()).toBe(`${client.name} has no way to sign in set up right now. Ask the administrator of this service.`);
  });
});
