import { setTimeout as sleep } from 'node:timers/promises';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { IdentityProvidersService } from '../../../src/identity-providers/identity-providers.service.js';
import { DEVICE_GRANT, pollDeviceToken, startDeviceAuthorization } from '../../factories/device-flow.factory.js';
import type { TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { credentials, LOOPBACK_PATTERN, pkcePair, postForm, revoke, storedHash } from '../../factories/token-flow.factory.js';
import { confirmSignIn } from '../../factories/upstream.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { query } from '../../setup/database.js';
import { freePort } from '../../setup/free-port.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { cancelAtUpstream, signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

// Relay mode with a real provider (oidc-provider in its own process): the device gets the
// provider's own tokens, handed over once by the service's code or device code, and its refreshes
// and revocations are forwarded to the provider. Every assertion is on what the device (or the
// provider itself) sees.

const KEK = 'c'.repeat(64);
const UPSTREAM_SECRET = 'relay-upstream-secret-789';
const ALICE = { sub: 'alice-sub', preferred_username: 'alice', password: 'rabbit-hole' };
const BOB = { sub: 'bob-sub', preferred_username: 'bob', password: 'builder-bob' };
const SIGNED_IN = "You're signed in";

type Account = typeof ALICE;
type Body = Record<string, unknown>;

/** The seed's token shape, with the provider's tokens in it. */
function expectRelayedShape(body: Body) {
  expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
  expect(body).toMatchObject({ access_token: expect.any(String), refresh_token: expect.any(String), token_type: 'bearer', scope: expect.any(String) });
  expect(Number.isInteger(body.expires_in)).toBe(true);
  // The provider's access tokens live 300 s (the harness's default).
  expect(body.expires_in).toBeGreaterThan(240);
  expect(body.expires_in).toBeLessThanOrEqual(300);
  // The provider's scope: what it granted of the scopes the service asked it for.
  expect((body.scope as string).split(' ')).toContain('openid');
  expect(['openid', 'profile', 'email', 'offline_access']).toEqual(expect.arrayContaining((body.scope as string).split(' ')));
}

/** `promise`, or an error after `ms`. */
async function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** A device's own callback server on 127.0.0.1: where the browser lands with the code. */
async function startDeviceCallback() {
  const port = await freePort();
  const arrivals: URL[] = [];
  let taken = 0;
  const server = createServer((request, response) => {
    const url = new URL(request.url!, `http://127.0.0.1:${port}`);
    // The browser asks for an icon too: only the redirect is the device's answer.
    if (url.pathname !== '/favicon.ico') arrivals.push(url);
    response.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Device got the answer</h1>');
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${port}/callback`,
    /** The next arrival not yet taken (each call takes one). */
    landing: async () => {
      while (arrivals.length <= taken) await new Promise((resolve) => setTimeout(resolve, 20));
      return arrivals[taken++];
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('relay mode through a real identity provider', () => {
  let app: TestApp;
  let upstream: UpstreamProvider;
  let browser: Browser;
  let owner: TestClient;
  let other: TestClient;
  let deviceClient: TestClient;
  let redirectingClient: TestClient;
  let providerMetadata: { userinfo_endpoint: string; token_endpoint: string };
  /** Every upstream token, secret and verifier the tests handled: none may reach a log or a page. */
  const secrets = new Set<string>([UPSTREAM_SECRET]);
  /** The HTML of every page the service showed a browser. */
  const pages: string[] = [];

  const token = async (client: TestClient, body: Record<string, string>) => {
    const response = await postForm(app, '/sso/token', { ...body, ...credentials(client) });
    for (const key of ['access_token', 'refresh_token']) if (typeof response.body?.[key] === 'string') secrets.add(response.body[key] as string);
    return response;
  };
  const refresh = (client: TestClient, refreshToken: string) => token(client, { grant_type: 'refresh_token', refresh_token: refreshToken });
  /** The provider's own userinfo endpoint with `accessToken`: its status (200 means the provider accepts the token). */
  const atProvider = async (accessToken: string) => {
    const response = await fetch(providerMetadata.userinfo_endpoint, { headers: { authorization: `Bearer ${accessToken}` }, signal: AbortSignal.timeout(5000) });
    return { status: response.status, body: (await response.json()) as Body };
  };

  /** A fresh browser (no session at the provider), the service's pages it is shown recorded. */
  async function inBrowser<T>(run: (page: Page) => Promise<T>): Promise<T> {
    const context = await browser.newContext();
    context.setDefaultTimeout(10_000);
    const reading: Promise<unknown>[] = [];
    context.on('response', (response) => {
      if (new URL(response.url()).origin !== app.baseUrl || !response.headers()['content-type']?.startsWith('text/html')) return;
      reading.push(response.text().then((html) => pages.push(html), () => undefined));
    });
    try {
      return await run(await context.newPage());
    } finally {
      await Promise.all(reading);
      await context.close();
    }
  }

  /** The helper's link followed through the provider's sign-in until the page says the device is signed in. */
  const signInThroughLink = (authorizeUrl: string, account: Account) =>
    inBrowser(async (page) => {
      await page.goto(authorizeUrl);
      await signInAtUpstream(page, { username: account.preferred_username, password: account.password });
      await confirmSignIn(page);
      await expect.poll(() => page.locator('h1').textContent(), { timeout: 5000 }).toBe(SIGNED_IN);
    });

  /** A polling helper device signed in as `account`: its code from code_url. */
  async function polledCode(client: TestClient, account: Account = ALICE): Promise<string> {
    const config = await issueState(app, client.id);
    await signInThroughLink(config.authorize_url, account);
    const polled = await fetch(config.code_url);
    expect(polled.status).toBe(200);
    return ((await polled.json()) as { code: string }).code;
  }

  /** A polling helper device signed in as `account`: the provider's tokens it got. */
  async function relayedTokens(client: TestClient, account: Account = ALICE): Promise<{ access_token: string; refresh_token: string }> {
    const exchanged = await token(client, { grant_type: 'authorization_code', code: await polledCode(client, account) });
    expect(exchanged.status).toBe(200);
    return exchanged.body as { access_token: string; refresh_token: string };
  }

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: KEK, CODE_POLL_MIN_INTERVAL: '0', DEVICE_POLL_INTERVAL: '1', IDP_HTTP_TIMEOUT_MS: '1000' });
    [upstream, browser] = await Promise.all([
      startUpstreamProvider({
        accounts: [ALICE, BOB],
        clients: [{ client_id: 'voyage', client_secret: UPSTREAM_SECRET, redirect_uris: [`${app.baseUrl}/sso/callback/corp`] }],
      }),
      launchChromium(),
    ]);
    providerMetadata = (await (await fetch(`${upstream.issuer}/.well-known/openid-configuration`)).json()) as typeof providerMetadata;
    await app.get(IdentityProvidersService).create({ name: 'corp', issuer: upstream.issuer, clientId: 'voyage', displayName: 'Corp account', mode: 'relay' }, UPSTREAM_SECRET);
    const create = async (name: string, options: object = {}) => {
      const created = await app.get(ClientsService).create({ name, signIn: ['corp'], ...options });
      return { id: created.client_id, secret: created.client_secret };
    };
    owner = await create('Bridge tablet');
    other = await create('Engine room panel');
    deviceClient = await create('Chart plotter', { grants: [DEVICE_GRANT, 'refresh_token'] });
    redirectingClient = await create('Deck camera', { redirectPatterns: [LOOPBACK_PATTERN] });
  });
  afterAll(async () => {
    await browser?.close();
    await upstream?.stop();
    await app?.close();
  });

  it("hands a polling helper device the provider's own tokens, once, in the helper's token shape, and erases them", async () => {
    const config = await issueState(app, owner.id);
    await signInThroughLink(config.authorize_url, ALICE);
    const polled = await fetch(config.code_url);
    expect(polled.status).toBe(200);
    const { code } = (await polled.json()) as { code: string };
    expect((await fetch(config.code_url)).status).toBe(404);
    const [waiting] = await query<{ sealed: Buffer }>(app.databaseUrl, 'SELECT token_response_sealed AS sealed FROM relay_hand_overs WHERE code_hash = $1', [storedHash(code)]);
    expect(waiting.sealed).toBeInstanceOf(Buffer);

    const exchanged = await token(owner, { grant_type: 'authorization_code', code });
    expect(exchanged.status).toBe(200);
    expectRelayedShape(exchanged.body);
    const { access_token, refresh_token } = exchanged.body as Record<string, string>;
    // The provider's token: its userinfo endpoint accepts it; the service's own keys do not verify it.
    expect(await atProvider(access_token)).toMatchObject({ status: 200, body: { sub: ALICE.sub } });
    await expect(jwtVerify(access_token, createRemoteJWKSet(new URL(`${app.baseUrl}/.well-known/jwks.json`)))).rejects.toThrow();

    // Kept sealed while it waited, and gone once handed over.
    expect(waiting.sealed.includes(access_token)).toBe(false);
    expect(waiting.sealed.includes(refresh_token)).toBe(false);
    const [after] = await query<{ sealed: Buffer | null }>(app.databaseUrl, 'SELECT token_response_sealed AS sealed FROM relay_hand_overs WHERE code_hash = $1', [storedHash(code)]);
    expect(after.sealed).toBeNull();

    const again = await token(owner, { grant_type: 'authorization_code', code });
    expect(again).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(again.body).not.toHaveProperty('access_token');
  });

  it("names the provider by its display name once on the confirmation and the \"You're signed in\" pages (You signed in with Corp account)", async () => {
    const config = await issueState(app, owner.id);
    await inBrowser(async (page) => {
      await page.goto(config.authorize_url);
      await signInAtUpstream(page, { username: ALICE.preferred_username, password: ALICE.password });
      await expect.poll(() => page.locator('h1').textContent(), { timeout: 5000 }).toBe('Continue to Bridge tablet?');
      expect(await page.locator('main p').first().textContent()).toBe('You signed in with Corp account.');
      await confirmSignIn(page);
      await expect.poll(() => page.locator('h1').textContent(), { timeout: 5000 }).toBe(SIGNED_IN);
      expect(await page.locator('main p').first().textContent()).toBe('Bridge tablet is now signed in with Corp account. Return to your device: it will finish signing in by itself.');
    });
  });

  it('sends the browser to the device’s redirect_url with code and state, and hands over only for the PKCE verifier', async () => {
    const device = await startDeviceCallback();
    /** A sign-in through the provider for a device waiting at its redirect_url with a PKCE challenge: the code it receives. */
    const codeAtDevice = async (challenge: string) => {
      const config = await issueState(app, redirectingClient.id, { redirect_url: device.url, code_challenge: challenge, code_challenge_method: 'S256' });
      const landed = await inBrowser(async (page) => {
        await page.goto(config.authorize_url);
        await signInAtUpstream(page, { username: ALICE.preferred_username, password: ALICE.password });
        await confirmSignIn(page);
        const url = await within(device.landing(), 5000, 'the browser never reached the device');
        await expect.poll(() => page.url(), { timeout: 5000 }).toBe(url.href);
        return url;
      });
      expect(`${landed.origin}${landed.pathname}`).toBe(device.url);
      expect(landed.searchParams.get('state')).toBe(config.state);
      return landed.searchParams.get('code')!;
    };
    try {
      const { verifier, challenge } = pkcePair();
      secrets.add(verifier);
      const exchanged = await token(redirectingClient, { grant_type: 'authorization_code', code: await codeAtDevice(challenge), code_verifier: verifier });
      expect(exchanged.status).toBe(200);
      expectRelayedShape(exchanged.body);
      expect((await atProvider(exchanged.body.access_token as string)).status).toBe(200);

      // Presented without its verifier, or with another, a code is refused and spent: it may have been stolen.
      for (const attempt of [{}, { code_verifier: pkcePair().verifier }] as Record<string, string>[]) {
        const code = await codeAtDevice(challenge);
        const refused = await token(redirectingClient, { grant_type: 'authorization_code', code, ...attempt });
        expect(refused).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
        expect(refused.body).not.toHaveProperty('access_token');
        const [spent] = await query<{ sealed: boolean }>(app.databaseUrl, 'SELECT token_response_sealed IS NOT NULL AS sealed FROM relay_hand_overs WHERE code_hash = $1', [storedHash(code)]);
        expect(spent).toEqual({ sealed: false });
        expect((await token(redirectingClient, { grant_type: 'authorization_code', code, code_verifier: verifier })).status).toBe(400);
      }
    } finally {
      await device.close();
    }
  });

  it("gives an RFC 8628 device the provider's tokens in the same shape once the user approves after the provider's sign-in, and says Device connected", async () => {
    const authorization = await startDeviceAuthorization(app, deviceClient);
    expect((await pollDeviceToken(app, deviceClient, authorization.device_code)).body).toMatchObject({ error: 'authorization_pending' });
    const firstPoll = Date.now();
    await inBrowser(async (page) => {
      await page.goto(authorization.verification_uri_complete);
      await page.getByRole('button', { name: 'Continue' }).click();
      await signInAtUpstream(page, { username: ALICE.preferred_username, password: ALICE.password });
      // RFC 8628 §5.4: the user sees which client asks, with which code, before anything is handed over.
      await expect.poll(() => page.locator('h1').textContent(), { timeout: 5000 }).toMatch(/^Connect .+\?$/);
      expect(await page.locator('main p').first().textContent()).toBe('You are signed in with Corp account.');
      expect(await query(app.databaseUrl, 'SELECT status FROM device_codes WHERE user_code = $1', [authorization.user_code.replace('-', '')])).toEqual([{ status: 'pending' }]);
      await page.getByRole('button', { name: 'Approve' }).click();
      await expect.poll(() => page.locator('h1').textContent(), { timeout: 5000 }).toBe('Device connected');
    });
    // A poll within DEVICE_POLL_INTERVAL of the first would be told slow_down.
    await sleep(Math.max(0, 1100 - (Date.now() - firstPoll)));
    const polled = await pollDeviceToken(app, deviceClient, authorization.device_code);
    expect(polled.status).toBe(200);
    expectRelayedShape(polled.body);
    for (const key of ['access_token', 'refresh_token']) secrets.add(polled.body[key] as string);
    expect(await atProvider(polled.body.access_token as string)).toMatchObject({ status: 200, body: { sub: ALICE.sub } });
    // Handed over once.
    const again = await pollDeviceToken(app, deviceClient, authorization.device_code);
    expect(again.status).toBe(400);
    expect(again.body).not.toHaveProperty('access_token');
  });

  it("erases the provider's tokens when the user denies the device after signing in there; the device gets access_denied", async () => {
    const authorization = await startDeviceAuthorization(app, deviceClient);
    await inBrowser(async (page) => {
      await page.goto(authorization.verification_uri_complete);
      await page.getByRole('button', { name: 'Continue' }).click();
      await signInAtUpstream(page, { username: ALICE.preferred_username, password: ALICE.password });
      await page.getByRole('button', { name: 'Deny' }).click();
      await expect.poll(() => page.locator('h1').textContent(), { timeout: 5000 }).toBe('Request denied');
    });
    expect((await pollDeviceToken(app, deviceClient, authorization.device_code)).body).toMatchObject({ error: 'access_denied' });
    const userCode = authorization.user_code.replace('-', '');
    expect(await query(app.databaseUrl, 'SELECT status FROM device_codes WHERE user_code = $1', [userCode])).toEqual([{ status: 'denied' }]);
    const left = await query(app.databaseUrl, 'SELECT 1 FROM relay_hand_overs h JOIN device_codes d ON d.device_code_hash = h.device_code_hash WHERE d.user_code = $1', [userCode]);
    expect(left).toEqual([]);
  });

  it('forwards a refresh to the provider: a new access token in the same shape, the rotated refresh token works next and the old one is invalid_grant', async () => {
    const first = await relayedTokens(owner);
    const refreshed = await refresh(owner, first.refresh_token);
    expect(refreshed.status).toBe(200);
    expectRelayedShape(refreshed.body);
    expect(refreshed.body.access_token).not.toBe(first.access_token);
    expect(refreshed.body.refresh_token).not.toBe(first.refresh_token);
    expect((await atProvider(refreshed.body.access_token as string)).status).toBe(200);

    expect(await refresh(owner, first.refresh_token)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const next = await refresh(owner, refreshed.body.refresh_token as string);
    expect(next.status).toBe(200);
    expectRelayedShape(next.body);
  });

  it('refuses a relayed refresh token to another client (invalid_grant) and leaves it working for its owner', async () => {
    const tokens = await relayedTokens(owner);
    const stolen = await refresh(other, tokens.refresh_token);
    expect(stolen).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(stolen.body).not.toHaveProperty('access_token');
    const own = await refresh(owner, tokens.refresh_token);
    expect(own.status).toBe(200);
    expectRelayedShape(own.body);
  });

  it('answers 503 temporarily_unavailable with Retry-After while the provider is down, and the same refresh token works once it is back; a silent provider within IDP_HTTP_TIMEOUT_MS', async () => {
    const tokens = await relayedTokens(owner);
    await upstream.kill();
    try {
      const away = await refresh(owner, tokens.refresh_token);
      expect(away).toMatchObject({ status: 503, body: { error: 'temporarily_unavailable' } });
      expect(Number(away.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await upstream.restart();
    }
    const back = await refresh(owner, tokens.refresh_token);
    expect(back.status).toBe(200);
    expectRelayedShape(back.body);

    // Connections accepted but never answered: 503 after IDP_HTTP_TIMEOUT_MS (1 s here). The
    // provider may still act on that refresh once it answers again, so this token is not used after.
    upstream.pause();
    try {
      const started = performance.now();
      const silent = await refresh(owner, back.body.refresh_token as string);
      expect(silent).toMatchObject({ status: 503, body: { error: 'temporarily_unavailable' } });
      expect(performance.now() - started).toBeLessThan(3000);
    } finally {
      upstream.resume();
    }
  });

  it('answers invalid_grant to a refresh once the account is deleted at the provider', async () => {
    const tokens = await relayedTokens(owner, BOB);
    await upstream.deleteAccount(BOB.sub);
    const refused = await refresh(owner, tokens.refresh_token);
    expect(refused).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(refused.body).not.toHaveProperty('access_token');
  });

  it('forwards /sso/revoke of a relayed refresh token to the provider, which then refuses it; another client’s revoke forwards nothing', async () => {
    const tokens = await relayedTokens(owner);
    expect((await revoke(app, other, tokens.refresh_token)).status).toBe(200);
    expect((await atProvider(tokens.access_token)).status).toBe(200);

    expect((await revoke(app, owner, tokens.refresh_token)).status).toBe(200);
    // The provider itself refuses the token now (asked directly, with the service's credentials there).
    const direct = await fetch(providerMetadata.token_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`voyage:${UPSTREAM_SECRET}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }),
      signal: AbortSignal.timeout(5000),
    });
    expect({ status: direct.status, error: ((await direct.json()) as Body).error }).toEqual({ status: 400, error: 'invalid_grant' });
    expect(await refresh(owner, tokens.refresh_token)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('answers access_denied at code_url to a polling helper device when the user cancels at the provider', async () => {
    const config = await issueState(app, owner.id);
    await inBrowser(async (page) => {
      await page.goto(config.authorize_url);
      await cancelAtUpstream(page);
      await expect.poll(() => page.locator('h1').textContent(), { timeout: 5000 }).toBe('Sign-in cancelled');
    });
    const polled = await fetch(config.code_url);
    expect({ status: polled.status, error: ((await polled.json()) as Body).error }).toEqual({ status: 400, error: 'access_denied' });
  });

  it('leaves no upstream token, provider secret or verifier in any log line or page', () => {
    // Every test above put what it handled here (so this test is not empty when run alone, it fails).
    expect(secrets.size).toBeGreaterThan(16);
    expect(pages.length).toBeGreaterThanOrEqual(5);
    const logs = app.logs.map((line) => JSON.stringify(line)).join('\n');
    for (const secret of secrets) {
      expect(logs.includes(secret), 'a log line holds an upstream token or secret').toBe(false);
      expect(pages.some((html) => html.includes(secret)), 'a page holds an upstream token or secret').toBe(false);
    }
  });
});
