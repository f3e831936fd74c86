import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { IdentityProvidersService } from '../../../src/identity-providers/identity-providers.service.js';
import { SUBSCRIBE_SCOPE } from '../../factories/notification.factory.js';
import { openStream } from '../../factories/stream.factory.js';
import { confirmSignIn } from '../../factories/upstream.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

// A brokered grant's refresh first asks the provider (IDP_RECHECK_INTERVAL=0: every refresh):
// while the account is there it refreshes; the provider away gives 503 and leaves the grant
// intact; the account deleted upstream ends the grant (invalid_grant) and closes its stream.

const KEK = 'b'.repeat(64);
const ALICE = { sub: 'alice-sub', preferred_username: 'alice', password: 'rabbit-hole' };
const BOB = { sub: 'bob-sub', preferred_username: 'bob', password: 'builder-bob' };

type Tokens = { access_token: string; refresh_token: string; error?: string };

describe('the re-check of a brokered user at each refresh', () => {
  let app: TestApp;
  let upstream: UpstreamProvider;
  let browser: Browser;
  let client: { id: string; secret: string };

  const token = async (body: Record<string, string>) => {
    const response = await fetch(`${app.baseUrl}/sso/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}` },
      body: new URLSearchParams(body),
    });
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as Tokens };
  };

  /** A polling helper device signed in through the provider as `account`: its first tokens. */
  async function signIn(account: { preferred_username: string; password: string }): Promise<Tokens> {
    const config = (await (await fetch(`${app.baseUrl}/external/oauth2helper/config/${client.id}`, { method: 'POST' })).json()) as Record<string, string>;
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(config.authorize_url);
      await signInAtUpstream(page, { username: account.preferred_username, password: account.password });
      await confirmSignIn(page);
      await expect.poll(() => page.locator('h1').textContent(), { timeout: 5000 }).toBe("You're signed in");
    } finally {
      await context.close();
    }
    const { code } = (await (await fetch(config.code_url)).json()) as { code: string };
    return (await token({ grant_type: 'authorization_code', code, scope: SUBSCRIBE_SCOPE })).body;
  }

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: KEK, IDP_HTTP_TIMEOUT_MS: '1000' });
    upstream = await startUpstreamProvider({
      accounts: [ALICE, BOB],
      clients: [{ client_id: 'voyage', client_secret: 'upstream-secret-456', redirect_uris: [`${app.baseUrl}/sso/callback/corp`] }],
    });
    await app.get(IdentityProvidersService).create({ name: 'corp', issuer: upstream.issuer, clientId: 'voyage' }, 'upstream-secret-456');
    const created = await app.get(ClientsService).create({ name: 'Chart plotter', signIn: ['corp'], scopes: [SUBSCRIBE_SCOPE] });
    client = { id: created.client_id, secret: created.client_secret };
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await upstream?.stop();
    await app?.close();
  });

  it('refreshes while the provider still accepts the user, and answers 503 with the grant intact while it is away', async () => {
    const first = await signIn(ALICE);
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token });
    expect(refreshed.status).toBe(200);

    await upstream.kill();
    const away = await token({ grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token });
    expect(away).toMatchObject({ status: 503, body: { error: 'temporarily_unavailable' } });
    expect(away.retryAfter).not.toBeNull();

    await upstream.restart();
    // The same refresh token still works: the 503 changed nothing.
    const back = await token({ grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token });
    expect(back.status).toBe(200);
  });

  it('holds no transaction while the provider answers slowly, and tells a concurrent refresh of the grant to try again', async () => {
    const first = await signIn(ALICE);
    upstream.pause();
    try {
      const slow = token({ grant_type: 'refresh_token', refresh_token: first.refresh_token });
      // While the provider keeps the first refresh waiting (IDP_HTTP_TIMEOUT_MS is 1 s here)…
      await new Promise((resolve) => setTimeout(resolve, 300));
      const database = new URL(app.databaseUrl).pathname.slice(1);
      const idle = await query<{ count: number }>(app.databaseUrl, "SELECT count(*)::int AS count FROM pg_stat_activity WHERE datname = $1 AND state = 'idle in transaction'", [database]);
      expect(idle).toEqual([{ count: 0 }]);
      const concurrent = await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token });
      expect(concurrent).toMatchObject({ status: 503, body: { error: 'temporarily_unavailable' } });
      expect(await slow).toMatchObject({ status: 503, body: { error: 'temporarily_unavailable' } });
    } finally {
      // The provider then answers the refresh it was holding, too late: its rotated refresh token is
      // lost to the service, so this grant's next re-check would fail. Nothing more is asked of it here.
      upstream.resume();
    }
  });

  it("ends the grant when the user's account is deleted at the provider: invalid_grant, and its stream closes", async () => {
    const first = await signIn(BOB);
    const stream = await openStream(app.baseUrl, first.access_token);
    await upstream.deleteAccount(BOB.sub);
    const refused = await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token });
    expect(refused).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect((await stream.closed).code).toBe(1008);
    const grants = await query<{ revoked: boolean }>(app.databaseUrl, "SELECT revoked_at IS NOT NULL AS revoked FROM grants g JOIN portal_users u ON u.id = g.user_id WHERE u.username = 'corp:bob-sub'");
    expect(grants).toEqual([{ revoked: true }]);
  });
});
