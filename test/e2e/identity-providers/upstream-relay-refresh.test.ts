import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { IdentityProvidersService } from '../../../src/identity-providers/identity-providers.service.js';
import { HousekeepingService } from '../../../src/database/housekeeping.service.js';
import type { TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { credentials, postForm, storedHash } from '../../factories/token-flow.factory.js';
import { confirmSignIn, heading, holdCallback } from '../../factories/upstream.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

// Relay mode's refreshes one at a time, a relayed code presented twice, and work with the provider
// inside the request's deadline, with a real provider that rotates its refresh tokens
// (oidc-provider in its own process; pause() holds its answers, delay() slows them).

const KEK = 'd'.repeat(64);
const UPSTREAM_SECRET = 'relay-refresh-secret-321';
const ALICE = { sub: 'alice-sub', preferred_username: 'alice', password: 'rabbit-hole' };
/** Room for a held refresh to be answered after resume(), and short enough to wait out once. */
const IDP_HTTP_TIMEOUT_MS = 2000;
/** Longer than one call to the provider may take, shorter than two slow ones in a row. */
const REQUEST_TIMEOUT_MS = 2500;
/** A slow provider's answer to each request: within IDP_HTTP_TIMEOUT_MS, but two of them outlast the deadline. */
const SLOW_MS = 1600;
const DISCOVERY = '/.well-known/openid-configuration';
const BUSY = 'another refresh with this refresh token is waiting for its identity provider: try again shortly';
const UNREACHABLE = 'the identity provider could not be reached: try again shortly';

type Body = Record<string, unknown>;
type Tokens = { access_token: string; refresh_token: string };

describe('relayed refreshes one at a time, and a relayed code presented twice', () => {
  let app: TestApp;
  let upstream: UpstreamProvider;
  let browser: Browser;
  let owner: TestClient;
  let tokenEndpoint: string;

  const token = (body: Record<string, string>) => postForm(app, '/sso/token', { ...body, ...credentials(owner) });
  const refresh = (refreshToken: string) => token({ grant_type: 'refresh_token', refresh_token: refreshToken });
  /** The provider's own token endpoint, refreshing with the service's credentials there: its status. */
  const refreshAtProvider = async (refreshToken: string) =>
    (
      await fetch(tokenEndpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`voyage:${UPSTREAM_SECRET}`).toString('base64')}` },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }),
        signal: AbortSignal.timeout(5000),
      })
    ).status;
  /** Whether a refresh holds the relayed refresh token's lease now; undefined once it is forgotten. */
  const leased = async (refreshToken: string) =>
    (await query<{ leased: boolean }>(app.databaseUrl, 'SELECT coalesce(refreshing_until > now(), false) AS leased FROM relayed_tokens WHERE token_hash = $1', [storedHash(refreshToken)]))[0]?.leased;

  /** As after idp:update: the service discovers the provider again at its next call, so that call asks it twice. */
  const rediscover = () => query(app.databaseUrl, "UPDATE identity_providers SET updated_at = now() WHERE name = 'corp'");
  /** Runs `work` while the provider's discovery and token endpoint each answer after SLOW_MS. */
  async function whileSlow<T>(work: () => Promise<T>): Promise<T> {
    await rediscover();
    await upstream.delay({ [DISCOVERY]: SLOW_MS, '/token': SLOW_MS });
    try {
      return await work();
    } finally {
      await upstream.delay({});
    }
  }

  /** A polling helper device signed in through the provider: its relayed code. */
  async function relayedCode(): Promise<string> {
    const config = await issueState(app, owner.id);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(config.authorize_url);
      await signInAtUpstream(page, { username: ALICE.preferred_username, password: ALICE.password });
      await confirmSignIn(page);
      await expect.poll(() => page.locator('h1').textContent(), { timeout: 5000 }).toBe("You're signed in");
    } finally {
      await context.close();
    }
    const polled = await fetch(config.code_url);
    expect(polled.status).toBe(200);
    return ((await polled.json()) as { code: string }).code;
  }
  async function relayedTokens(code?: string): Promise<Tokens> {
    const exchanged = await token({ grant_type: 'authorization_code', code: code ?? (await relayedCode()) });
    expect(exchanged.status).toBe(200);
    return exchanged.body as Tokens;
  }

  beforeAll(async () => {
    app = await startTestApp({
      KEYS_ENCRYPTION_KEY: KEK,
      CODE_POLL_MIN_INTERVAL: '0',
      IDP_HTTP_TIMEOUT_MS: String(IDP_HTTP_TIMEOUT_MS),
      REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    });
    [upstream, browser] = await Promise.all([
      startUpstreamProvider({
        accounts: [ALICE],
        clients: [{ client_id: 'voyage', client_secret: UPSTREAM_SECRET, redirect_uris: [`${app.baseUrl}/sso/callback/corp`] }],
      }),
      launchChromium(),
    ]);
    tokenEndpoint = ((await (await fetch(`${upstream.issuer}/.well-known/openid-configuration`)).json()) as { token_endpoint: string }).token_endpoint;
    await app.get(IdentityProvidersService).create({ name: 'corp', issuer: upstream.issuer, clientId: 'voyage', displayName: 'Corp SSO', mode: 'relay' }, UPSTREAM_SECRET);
    const created = await app.get(ClientsService).create({ name: 'Bridge tablet', signIn: ['corp'] });
    owner = { id: created.client_id, secret: created.client_secret };
  });
  afterAll(async () => {
    await browser?.close();
    await upstream?.stop();
    await app?.close();
  });

  it('tells a second refresh with the same token to try again (503, Retry-After) while the first waits for the provider, without holding a transaction; the first succeeds and its new token works', async () => {
    const tokens = await relayedTokens();
    upstream.pause();
    const first = refresh(tokens.refresh_token);
    try {
      await expect.poll(() => leased(tokens.refresh_token), { timeout: 1000, interval: 20 }).toBe(true);
      const database = new URL(app.databaseUrl).pathname.slice(1);
      const idle = await query<{ count: number }>(app.databaseUrl, "SELECT count(*)::int AS count FROM pg_stat_activity WHERE datname = $1 AND state = 'idle in transaction'", [database]);
      expect(idle).toEqual([{ count: 0 }]);

      const started = performance.now();
      const second = await refresh(tokens.refresh_token);
      // Told at once, from the database: the provider was not asked a second time.
      expect(performance.now() - started).toBeLessThan(IDP_HTTP_TIMEOUT_MS / 2);
      expect(second).toMatchObject({ status: 503, body: { error: 'temporarily_unavailable', error_description: BUSY } });
      expect(second.headers.get('retry-after')).toBe('1');
    } finally {
      upstream.resume();
    }
    const renewed = await first;
    expect(renewed.status).toBe(200);
    const next = renewed.body as Tokens;
    expect(next.refresh_token).not.toBe(tokens.refresh_token);
    expect(await leased(tokens.refresh_token)).toBeUndefined();
    // The provider rotated the token once: the old one is spent, the new one works, and works again.
    expect(await refresh(tokens.refresh_token)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const again = await refresh(next.refresh_token);
    expect(again.status).toBe(200);
    expect((await refresh((again.body as Tokens).refresh_token)).status).toBe(200);
  });

  it('lets a retry go to the provider at once after a refresh it did not answer in time (the lease is released, not left to run out)', async () => {
    const tokens = await relayedTokens();
    upstream.pause();
    try {
      expect(await refresh(tokens.refresh_token)).toMatchObject({ status: 503, body: { error: 'temporarily_unavailable', error_description: UNREACHABLE } });
      expect(await leased(tokens.refresh_token)).toBe(false);
      const started = performance.now();
      const retry = await refresh(tokens.refresh_token);
      expect(retry).toMatchObject({ status: 503, body: { error: 'temporarily_unavailable', error_description: UNREACHABLE } });
      // Forwarded again: it waited for the provider, as the first did.
      expect(performance.now() - started).toBeGreaterThanOrEqual(IDP_HTTP_TIMEOUT_MS - 100);
    } finally {
      // The provider then answers the refreshes it was holding, too late: this token is not used after.
      upstream.resume();
    }
  });

  it('ends what a relayed code handed over when the code comes back: invalid_grant, and its refresh tokens (rotated ones too) are refused here from then on', async () => {
    const code = await relayedCode();
    const first = await relayedTokens(code);
    const rotated = await refresh(first.refresh_token);
    expect(rotated.status).toBe(200);
    const { refresh_token } = rotated.body as Tokens;
    // Within the code's life the housekeeping round keeps its hand-over: the replay is still known.
    await app.get(HousekeepingService).purge();

    const replayed = await token({ grant_type: 'authorization_code', code });
    expect(replayed).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'the authorization code was already used' } });
    expect(replayed.body).not.toHaveProperty('access_token');
    expect(await refresh(refresh_token)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    // Refused here without a word to the provider (the service keeps no token value to revoke there): it still takes it.
    expect(await refreshAtProvider(refresh_token)).toBe(200);

    await new Promise((resolve) => setImmediate(resolve));
    const events = app.logs.filter((line) => line.event === 'token.replayed');
    expect(events).toEqual([
      expect.objectContaining({ level: 'warn', reason: 'code_replayed', clientId: owner.id, userId: null, grantId: null, grantRevoked: false, provider: 'corp', relayedTokensForgotten: 3 }),
    ]);
    expect(JSON.stringify(events)).not.toContain(code);
  });

  it("keeps a relayed code's tokens working once the code has expired and the housekeeping round erased its hand-over", async () => {
    const code = await relayedCode();
    const tokens = await relayedTokens(code);
    await query(app.databaseUrl, "UPDATE relay_hand_overs SET expires_at = now() - interval '1 second' WHERE code_hash = $1", [storedHash(code)]);
    await app.get(HousekeepingService).purge();
    expect(await query(app.databaseUrl, 'SELECT 1 FROM relay_hand_overs WHERE code_hash = $1', [storedHash(code)])).toEqual([]);
    const linked = await query<{ hand_over_id: string | null }>(app.databaseUrl, 'SELECT hand_over_id FROM relayed_tokens WHERE token_hash = $1', [storedHash(tokens.refresh_token)]);
    expect(linked).toEqual([{ hand_over_id: null }]);

    const refreshed = await refresh(tokens.refresh_token);
    expect(refreshed.status).toBe(200);
    expect((await token({ grant_type: 'authorization_code', code })).body).toMatchObject({ error: 'invalid_grant', error_description: 'the authorization code is invalid' });
    expect((await refresh((refreshed.body as Body).refresh_token as string)).status).toBe(200);
  });
  it('answers 503 at the deadline to a relayed refresh the provider would answer only after it, leaving the refresh token as it was: the retry with it succeeds', async () => {
    const tokens = await relayedTokens();
    const late = await whileSlow(() => refresh(tokens.refresh_token));
    expect(late).toMatchObject({ status: 503, body: { error: 'temporarily_unavailable' } });
    expect(late.headers.get('retry-after')).toBe('1');
    // Whatever that refresh did has ended: its lease is not held any more.
    await expect.poll(() => leased(tokens.refresh_token), { timeout: 3 * IDP_HTTP_TIMEOUT_MS + 2000, interval: 50 }).not.toBe(true);

    const retry = await refresh(tokens.refresh_token);
    expect(retry.status).toBe(200);
    const next = retry.body as Tokens;
    expect(next.refresh_token).not.toBe(tokens.refresh_token);
    expect((await refresh(next.refresh_token)).status).toBe(200);
  });

  it('answers the "could not be reached" page at the deadline when the provider would answer the callback only after it, signing nothing in; the sign-in started again succeeds', async () => {
    const config = await issueState(app, owner.id);
    const context = await browser.newContext({ javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    try {
      const page = await context.newPage();
      const { url } = await holdCallback(app, page, config.authorize_url, { username: ALICE.preferred_username, password: ALICE.password });
      const logged = app.logs.length;
      const response = await whileSlow(() => page.goto(url, { timeout: 8_000 }));
      expect(response!.status()).toBe(503);
      expect(await response!.headerValue('retry-after')).toBe('5');
      expect(await heading(page)).toBe('Corp SSO is unavailable');
      expect(await page.locator('main p').textContent()).toBe('Corp SSO could not be reached to finish the sign-in. Start the sign-in again from your device.');
      // The callback's work ended with its answer: the sign-in failed, and nothing of it was signed in or held for a Continue.
      const outcomes = app.logs.slice(logged).filter((line) => String(line.event).startsWith('upstream.'));
      expect(outcomes).toEqual([expect.objectContaining({ event: 'upstream.failed', reason: 'unreachable', provider: 'corp' })]);
    } finally {
      await context.close();
    }
    expect((await relayedTokens()).refresh_token).toEqual(expect.any(String));
  });
});
