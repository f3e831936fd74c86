import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEVICE_GRANT, pollDeviceToken, startDeviceAuthorization } from '../../factories/device-flow.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { exchangeCode } from '../../factories/token-flow.factory.js';
import { ALICE, confirmSignIn, createSignInClient, heading, newKek, nextCallback, registerProvider, type RegisteredProvider } from '../../factories/upstream.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

// The provider's client secret, the PKCE verifier, the provider's code and every token it issued
// stay between the service and the provider: none reaches a log line or a page, and what the
// database keeps of them is sealed.

/** What went over the wire to the provider's token endpoint, seen by wrapping the process's fetch (the app runs in it). */
interface Exchange {
  code: string;
  codeVerifier: string;
  authorization: string;
  tokens: { access_token: string; refresh_token?: string; id_token: string };
}

/**
 * Every window of `length` characters of `secret` (a secret cut short is still a leak). An ID
 * token is its signature here: its header and claims share their base64 with any JWT (the
 * service's own state), and the signature is what only this token has.
 */
function windows(secret: string, length = 16): string[] {
  const unique = secret.split('.').length === 3 ? secret.split('.')[2] : secret;
  return Array.from({ length: Math.max(1, unique.length - length + 1) }, (_, start) => unique.slice(start, start + length));
}

describe('no upstream secret in a log line, a page or the database in the clear', () => {
  let app: TestApp;
  let upstream: UpstreamProvider;
  let corp: RegisteredProvider;
  let browser: Browser;
  let context: BrowserContext;
  const exchanges: Exchange[] = [];
  const pages: Promise<string>[] = [];
  const realFetch = globalThis.fetch;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek(), CODE_POLL_MIN_INTERVAL: '0' });
    [upstream, browser] = await Promise.all([startUpstreamProvider({ accounts: [ALICE] }), launchChromium()]);
    corp = await registerProvider(app, upstream, 'corp', 'Corp SSO');
    const tokenEndpoint = `${upstream.issuer}/token`;
    globalThis.fetch = async (input, init) => {
      const response = await realFetch(input, init);
      if (String(input instanceof Request ? input.url : input) === tokenEndpoint) {
        const sent = new URLSearchParams(String(init?.body));
        exchanges.push({
          code: sent.get('code')!,
          codeVerifier: sent.get('code_verifier')!,
          authorization: new Headers(init?.headers).get('authorization') ?? '',
          tokens: (await response.clone().json()) as Exchange['tokens'],
        });
      }
      return response;
    };
    context = await browser.newContext({ javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    // Every page the service sent this browser, as HTML (a body the browser already let go of is
    // read from the page itself after each step, see shown()).
    context.on('response', (response) => {
      const fromService = response.url().startsWith(app.baseUrl) && (response.headers()['content-type'] ?? '').includes('text/html');
      if (fromService && !(response.status() >= 300 && response.status() < 400)) pages.push(response.text().catch(() => ''));
    });
  });
  afterAll(async () => {
    globalThis.fetch = realFetch;
    await browser?.close();
    await upstream?.stop();
    await app?.close();
  });

  /** The page as the user sees it now. */
  const shown = async (page: Page) => pages.push(Promise.resolve(await page.content()));

  /** A sign-in at the provider in the shared browser: its session there makes the later ones single sign-on. */
  async function signInThere(page: Page) {
    if (page.url().startsWith(upstream.issuer)) await signInAtUpstream(page, { username: 'alice', password: ALICE.password });
  }

  it('keeps the client secret, the PKCE verifier, the code and the provider’s tokens out of every log line and page, and sealed in the database', async () => {
    // The helper flow (polling device), then the callback loaded again (refused).
    const helper = await createSignInClient(app, ['corp']);
    const config = await issueState(app, helper.id);
    const page = await context.newPage();
    await page.goto(config.authorize_url);
    const callback = nextCallback(page);
    await signInThere(page);
    const callbackUrl = (await callback).url();
    await shown(page);
    await confirmSignIn(page);
    expect(await heading(page)).toBe("You're signed in");
    await shown(page);
    const polled = (await (await fetch(config.code_url)).json()) as { code: string };
    expect((await exchangeCode(app, helper, polled.code)).status).toBe(200);
    expect((await page.goto(callbackUrl))!.status()).toBe(400);
    await shown(page);

    // The device flow: code, the service's session offered ("Choose an account") but another
    // sign-in at the provider chosen (single sign-on there now), approval.
    const device = await createSignInClient(app, ['corp'], { grants: [DEVICE_GRANT] });
    const authorization = await startDeviceAuthorization(app, device);
    await page.goto(authorization.verification_uri);
    await page.getByLabel('Code').fill(authorization.user_code);
    await page.getByRole('button', { name: 'Continue' }).click();
    expect(await heading(page)).toBe('Choose an account');
    await page.getByRole('button', { name: 'Use another account' }).click();
    await signInThere(page);
    expect(await heading(page)).toBe(`Connect ${device.name}?`);
    await shown(page);
    await page.getByRole('button', { name: 'Approve' }).click();
    expect(await heading(page)).toBe('Device connected');
    await shown(page);
    expect((await pollDeviceToken(app, device, authorization.device_code)).status).toBe(200);

    expect(exchanges).toHaveLength(2);
    const secrets = [
      corp.clientSecret,
      ...exchanges.flatMap(({ code, codeVerifier, authorization: basic, tokens }) => [code, codeVerifier, basic.replace(/^Basic /, ''), tokens.access_token, tokens.refresh_token!, tokens.id_token]),
    ];
    expect(secrets.every((secret) => typeof secret === 'string' && secret.length >= 16)).toBe(true);

    const logText = app.logs.map((line) => JSON.stringify(line));
    expect(logText.some((line) => line.includes('upstream.signed_in'))).toBe(true);
    const html = await Promise.all(pages);
    expect(html.length).toBeGreaterThanOrEqual(5);
    for (const secret of secrets) {
      for (const piece of windows(secret)) {
        expect(logText.find((line) => line.includes(piece))).toBeUndefined();
        expect(html.find((text) => text.includes(piece))).toBeUndefined();
      }
    }

    // The database: what it keeps of them is sealed (no window of any, as text or hex, in any row).
    const sealed = await query<{ verifiers: Buffer[]; refresh_tokens: Buffer[]; secret: Buffer }>(
      app.databaseUrl,
      `SELECT (SELECT array_agg(code_verifier_sealed) FROM upstream_sign_ins) AS verifiers,
              (SELECT array_agg(refresh_token_sealed) FROM upstream_sessions) AS refresh_tokens,
              (SELECT client_secret_sealed FROM identity_providers WHERE name = 'corp') AS secret`,
    );
    expect(sealed[0].verifiers).toHaveLength(2);
    expect(sealed[0].refresh_tokens).toHaveLength(2);
    const rows: string[] = [];
    for (const table of ['identity_providers', 'upstream_sign_ins', 'upstream_sessions', 'portal_users', 'authorizations', 'authorization_codes', 'grants', 'refresh_tokens', 'device_codes']) {
      rows.push(...(await query<{ row: string }>(app.databaseUrl, `SELECT t::text AS row FROM ${table} t`)).map(({ row }) => row));
    }
    const stored = [...rows, ...[...sealed[0].verifiers, ...sealed[0].refresh_tokens, sealed[0].secret].map((bytes) => bytes.toString('latin1'))];
    for (const secret of secrets) {
      for (const piece of windows(secret)) {
        const hex = Buffer.from(piece).toString('hex');
        expect(stored.find((text) => text.includes(piece) || text.includes(hex))).toBeUndefined();
      }
    }
  });
});
