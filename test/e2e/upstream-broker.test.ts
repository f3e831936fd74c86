import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ClientsService } from '../../src/clients/clients.service.js';
import { IdentityProvidersService } from '../../src/identity-providers/identity-providers.service.js';
import { launchChromium } from '../setup/chromium.js';
import { query } from '../setup/database.js';
import { startTestApp, type TestApp } from '../setup/test-app.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../setup/upstream/upstream-provider.js';

// Broker mode with a real provider (oidc-provider in its own process, its own sign-in page):
// the helper flow's polling device signs in through it and gets the service's own tokens.

const KEK = 'a'.repeat(64);
const ALICE = { sub: 'alice-sub', preferred_username: 'alice', name: 'Alice Liddell', email: 'alice@example.test', email_verified: true, password: 'rabbit-hole' };

describe('broker mode through a real identity provider', () => {
  let app: TestApp;
  let upstream: UpstreamProvider;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let clientId: string;
  let clientSecret: string;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: KEK });
    upstream = await startUpstreamProvider({
      accounts: [ALICE],
      clients: [{ client_id: 'voyage', client_secret: 'upstream-secret-123', redirect_uris: [`${app.baseUrl}/sso/callback/corp`] }],
    });
    await app.get(IdentityProvidersService).create({ name: 'corp', issuer: upstream.issuer, clientId: 'voyage', displayName: 'Corp SSO' }, 'upstream-secret-123');
    const client = await app.get(ClientsService).create({ name: 'Bridge tablet', signIn: ['corp'] });
    [clientId, clientSecret] = [client.client_id, client.client_secret];
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await upstream?.stop();
    await app?.close();
  });
  beforeEach(async () => {
    context = await browser.newContext();
    page = await context.newPage();
  });
  afterEach(async () => context?.close());

  it('a polling device signs in through the provider and gets tokens for the linked user', async () => {
    const config = (await (await fetch(`${app.baseUrl}/external/oauth2helper/config/${clientId}`, { method: 'POST' })).json()) as Record<string, string>;
    await page.goto(config.authorize_url);
    await signInAtUpstream(page, { username: 'alice', password: ALICE.password });
    await expect.poll(() => page.locator('h1').textContent(), { timeout: 5000 }).toBe("You're signed in");
    expect(await page.locator('main').textContent()).toContain('alice');
    const polled = (await (await fetch(config.code_url)).json()) as { code: string };
    expect(polled.code).toBeTypeOf('string');
    const tokens = (await (
      await fetch(config.accesstoken_request_url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}` },
        body: new URLSearchParams({ grant_type: 'authorization_code', code: polled.code }),
      })
    ).json()) as Record<string, string>;
    expect(tokens.access_token).toBeTypeOf('string');
    const [user] = await query<{ username: string; provider: string; profile: object }>(app.databaseUrl, 'SELECT username, provider, profile FROM portal_users');
    expect(user).toMatchObject({ username: 'corp:alice-sub', provider: 'corp', profile: { preferred_username: 'alice', email: 'alice@example.test' } });
  });
});
