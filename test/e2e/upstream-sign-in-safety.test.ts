import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../src/clients/clients.service.js';
import { issueState } from '../factories/state.factory.js';
import { ALICE, createSignInClient, heading, newKek, registerProvider } from '../factories/upstream.factory.js';
import { launchChromium } from '../setup/chromium.js';
import { startTestApp, type TestApp } from '../setup/test-app.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../setup/upstream/upstream-provider.js';

// What keeps a sign-in through a provider the user's own act: the provider's sign-in page every
// time (never a silent single sign-on for a device's link someone else may have sent), the
// client's current sign-in methods at the callback, and one browser binding for all its tabs.

const credentials = { username: 'alice', password: ALICE.password };

describe('a sign-in through a provider is the user’s own act', () => {
  let app: TestApp;
  let upstream: UpstreamProvider;
  let browser: Browser;
  let context: BrowserContext;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek() });
    [upstream, browser] = await Promise.all([startUpstreamProvider({ accounts: [ALICE] }), launchChromium()]);
    await registerProvider(app, upstream, 'corp', 'Corp SSO');
  });
  afterAll(async () => {
    await browser?.close();
    await upstream?.stop();
    await app?.close();
  });
  afterEach(async () => context?.close());

  const newBrowser = async () => {
    context = await browser.newContext({ javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    return context;
  };

  it('shows the provider’s sign-in page again to a browser that already has a session there', async () => {
    const client = await createSignInClient(app, ['corp']);
    const page = await (await newBrowser()).newPage();
    await page.goto((await issueState(app, client.id)).authorize_url);
    await signInAtUpstream(page, credentials);
    expect(await heading(page)).toBe("You're signed in");
    // The provider has a session for this browser now: a second device link still asks.
    await page.goto((await issueState(app, client.id)).authorize_url);
    expect(new URL(page.url()).origin).toBe(upstream.issuer);
    await expect.poll(() => page.locator('input[name="password"]').isVisible(), { timeout: 5000 }).toBe(true);
  });

  it('refuses a sign-in that comes back after the client stopped signing in through that provider', async () => {
    const client = await createSignInClient(app, ['corp', 'local']);
    const page = await (await newBrowser()).newPage();
    await page.goto((await issueState(app, client.id)).authorize_url);
    await page.getByRole('button', { name: 'Corp SSO' }).click();
    await app.get(ClientsService).update(client.id, { signIn: ['local'] });
    await signInAtUpstream(page, credentials);
    expect(await heading(page)).toBe('This sign-in does not work');
    expect(await page.locator('main p').textContent()).toBe('This application no longer signs in through Corp SSO. Start the sign-in again from your device.');
  });

  it('finishes sign-ins started in two tabs of one browser, each for its own device', async () => {
    const client = await createSignInClient(app, ['corp']);
    const browserContext = await newBrowser();
    const [first, second] = [await browserContext.newPage(), await browserContext.newPage()];
    const [firstLink, secondLink] = [await issueState(app, client.id), await issueState(app, client.id)];
    await first.goto(firstLink.authorize_url);
    await second.goto(secondLink.authorize_url);
    await signInAtUpstream(first, credentials);
    await signInAtUpstream(second, credentials);
    expect([await heading(first), await heading(second)]).toEqual(["You're signed in", "You're signed in"]);
    for (const link of [firstLink, secondLink]) expect((await fetch(link.code_url)).status).toBe(200);
  });
});
