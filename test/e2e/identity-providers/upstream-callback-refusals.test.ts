import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { ALICE, confirmSignIn, createSignInClient, heading, holdCallback, issuedRows, newKek, nextCallback, registerProvider } from '../../factories/upstream.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { type ForgingProvider, startForgingProvider } from '../../setup/upstream/forging-provider.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

// GET /sso/callback/NAME takes a sign-in once, from the browser that started it, at the provider
// it was started with: anything else is a 400 page saying why, and nothing is issued.

/** What a browser shows for a URL: the status and the page's heading and message. */
async function pageAt(url: string, cookie?: string) {
  const response = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
  const html = await response.text();
  const text = (pattern: RegExp) => pattern.exec(html)?.[1].replaceAll('&#39;', "'");
  return { status: response.status, heading: text(/<h1>(.*?)<\/h1>/)?.replace(/<[^>]+>/g, ''), message: text(/<\/h1>\s*<p>([^<]*)<\/p>/) };
}

describe('callbacks the service refuses', () => {
  let app: TestApp;
  let upstream: UpstreamProvider;
  let forge: ForgingProvider;
  let browser: Browser;
  let contexts: BrowserContext[] = [];
  let client: TestClient & { name: string };

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek(), CODE_POLL_MIN_INTERVAL: '0' });
    [upstream, forge, browser] = await Promise.all([startUpstreamProvider({ accounts: [ALICE] }), startForgingProvider(), launchChromium()]);
    await registerProvider(app, upstream, 'corp', 'Corp SSO');
    // Only its name matters here: a callback of corp's sign-in presented at it.
    await registerProvider(app, forge, 'forge', 'Forge');
    client = await createSignInClient(app, ['corp']);
  });
  afterAll(async () => {
    await browser?.close();
    await upstream?.stop();
    await forge?.close();
    await app?.close();
  });
  afterEach(async () => {
    await Promise.all(contexts.map((context) => context.close()));
    contexts = [];
  });

  async function freshPage(): Promise<Page> {
    const context = await browser.newContext({ javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    contexts.push(context);
    return context.newPage();
  }

  it('refuses a callback loaded again with an "already used" page (400), issuing nothing more', async () => {
    const config = await issueState(app, client.id);
    const page = await freshPage();
    await page.goto(config.authorize_url);
    const callback = nextCallback(page);
    await signInAtUpstream(page, { username: 'alice', password: ALICE.password });
    const callbackUrl = (await callback).url();
    await confirmSignIn(page);
    expect(await heading(page)).toBe("You're signed in");
    expect((await fetch(config.code_url)).status).toBe(200);
    const before = await issuedRows(app);

    const again = await page.goto(callbackUrl);
    expect(again!.status()).toBe(400);
    expect(await heading(page)).toBe('This sign-in was already used');
    expect(await issuedRows(app)).toEqual(before);
    expect((await fetch(config.code_url)).status).toBe(404);
  });

  it('refuses a callback opened in another browser (no binding cookie) with a 400 page, and the browser that started it can still finish', async () => {
    const config = await issueState(app, client.id);
    const started = await freshPage();
    const { url } = await holdCallback(app, started, config.authorize_url, { username: 'alice', password: ALICE.password });
    const before = await issuedRows(app);

    const foreign = await freshPage();
    const refused = await foreign.goto(url);
    expect(refused!.status()).toBe(400);
    expect(await heading(foreign)).toBe('Finish in the browser where you started');
    expect(await issuedRows(app)).toEqual(before);
    expect((await fetch(config.code_url)).status).toBe(404);

    const finished = await started.goto(url);
    expect(finished!.status()).toBe(200);
    await confirmSignIn(started);
    expect(await heading(started)).toBe("You're signed in");
    expect((await fetch(config.code_url)).status).toBe(200);
  });

  it('refuses a callback for an unknown provider name, or for another provider than the sign-in was started with, with a 400 page', async () => {
    const config = await issueState(app, client.id);
    const { url, cookie } = await holdCallback(app, await freshPage(), config.authorize_url, { username: 'alice', password: ALICE.password });
    const before = await issuedRows(app);
    const at = (name: string) => {
      const moved = new URL(url);
      moved.pathname = `/sso/callback/${name}`;
      return moved.href;
    };

    for (const name of ['nosuch', 'CORP', 'corp%00', 'a'.repeat(64)]) {
      expect(await pageAt(at(name), cookie)).toEqual({
        status: 400,
        heading: 'This sign-in does not work',
        message: 'The answer is for an identity provider that is not registered here.',
      });
    }
    expect(await pageAt(at('forge'), cookie)).toEqual({
      status: 400,
      heading: 'This sign-in does not work',
      message: 'This answer was not started here, or is too old. Start the sign-in again from your device.',
    });
    expect(forge.tokenRequests()).toBe(0);
    expect(await issuedRows(app)).toEqual(before);
    // Still this browser's to finish at the right callback.
    expect((await pageAt(url, cookie)).heading).toBe(`Continue to ${client.name}?`);
  });

  it('refuses a callback without a state (or an empty one) with a 400 page', async () => {
    const before = await issuedRows(app);
    for (const query of ['code=abc', 'code=abc&state=', `code=abc&iss=${encodeURIComponent(upstream.issuer)}`, '']) {
      expect(await pageAt(`${app.baseUrl}/sso/callback/corp?${query}`)).toEqual({
        status: 400,
        heading: 'This sign-in does not work',
        message: 'The answer from the identity provider is incomplete. Start the sign-in again from your device.',
      });
    }
    expect(await issuedRows(app)).toEqual(before);
  });
});
