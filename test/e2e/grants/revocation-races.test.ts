import { decodeJwt } from 'jose';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { PgListenerService } from '../../../src/database/pg-listener.service.js';
import { KeysService } from '../../../src/keys/keys.service.js';
import { HousekeepingService } from '../../../src/database/housekeeping.service.js';
import { SignOutsRepository } from '../../../src/grants/sign-outs.repository.js';
import { UsersService } from '../../../src/users/users.service.js';
import { DEVICE_GRANT, pollDeviceToken, startDeviceAuthorization, verifyDevice } from '../../factories/device-flow.factory.js';
import { SUBSCRIBE_SCOPE } from '../../factories/notification.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import {
  authorizationCode,
  exchangeCode,
  type FormResponse,
  introspect,
  issueTokens,
  LOOPBACK_PATTERN,
  LOOPBACK_REDIRECT,
  type PortalUser,
  refresh,
  revoke,
  storedHash,
  userId,
} from '../../factories/token-flow.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const READ = 'report:read';
const WRITE = 'report:write';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A session of the test's own on the app's database, to hold locks the service then meets. */
async function lockSession(app: TestApp): Promise<pg.Client> {
  const session = new pg.Client({ connectionString: app.databaseUrl, application_name: 'test-lock-holder' });
  await session.connect();
  await session.query('BEGIN');
  return session;
}

/** Waits until some statement of the service waits for a lock (up to 5 s). */
async function untilSomeoneWaitsForALock(app: TestApp): Promise<void> {
  for (const deadline = Date.now() + 5_000; Date.now() < deadline; await sleep(20)) {
    const [{ waiting }] = await query<{ waiting: number }>(
      app.databaseUrl,
      `SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if (waiting > 0) return;
  }
  throw new Error('nothing waited for the lock');
}

/**
 * What a token response is worth after a sign-out: nothing, whether it was refused at once or
 * issued and then revoked. 'refused' or 'dead'; 'alive' is the defect.
 */
async function worthAfterSignOut(app: TestApp, client: TestClient, response: FormResponse): Promise<'refused' | 'dead' | 'alive'> {
  if (response.status !== 200) return 'refused';
  const renewed = await refresh(app, client, response.body.refresh_token as string);
  const active = (await introspect(app, client, response.body.access_token as string)).body.active;
  return renewed.status === 200 || active ? 'alive' : 'dead';
}

/** How the sign-in page answers a sign-in with this link: 'signed in', or the heading of the page it shows instead. */
async function signInAgain(authorizeUrl: string, user: PortalUser): Promise<string> {
  const page = await fetch(authorizeUrl);
  const heading = (html: string) => /<h1[^>]*>([^<]*)<\/h1>/.exec(html)?.[1];
  if (page.status !== 200) return heading(await page.text()) ?? `status ${page.status}`;
  const response = await signIn(authorizeUrl, user);
  const html = await response.text();
  if (response.status === 200 && html.includes('Return to your device')) return 'signed in';
  return heading(html) ?? `status ${response.status}`;
}

describe('revocation under races (one revocation model)', () => {
  let app: TestApp;
  let helperClient: TestClient;
  let deviceClient: TestClient;
  let lock: pg.Client | undefined;

  beforeAll(async () => {
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0', DEVICE_POLL_INTERVAL: '1', REFRESH_REUSE_GRACE: '0' });
    helperClient = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN], scopes: [READ, WRITE] });
    deviceClient = await createClient(app, { grants: [DEVICE_GRANT as never, 'refresh_token'], scopes: [READ, WRITE] });
  });
  afterEach(async () => {
    await lock?.end().catch(() => {});
    lock = undefined;
  });
  afterAll(() => app?.close());

  it('a password change under way when a code is redeemed and a device code polled leaves no token of theirs alive', async () => {
    const user = await createUser(app);
    // The sign-out voids the user's codes in table order: the first code, held by the test, stops
    // it there, after it revoked the grants and before it reached the second one.
    const held = await authorizationCode(app, helperClient, user, { redirectUrl: LOOPBACK_REDIRECT });
    const code = await authorizationCode(app, helperClient, user, { redirectUrl: LOOPBACK_REDIRECT });
    const device = await startDeviceAuthorization(app, deviceClient);
    await verifyDevice(app, device.user_code, user);

    lock = await lockSession(app);
    await lock.query('SELECT 1 FROM authorization_codes WHERE code_hash = $1 FOR UPDATE', [storedHash(held)]);
    const passwordChange = app.get(UsersService).setPassword(user.username, 'a brand new passphrase');
    await untilSomeoneWaitsForALock(app);
    const exchanged = exchangeCode(app, helperClient, code);
    const polled = pollDeviceToken(app, deviceClient, device.device_code);
    await sleep(500);
    await lock.query('ROLLBACK');
    await passwordChange;

    expect(await worthAfterSignOut(app, helperClient, await exchanged)).not.toBe('alive');
    expect(await worthAfterSignOut(app, deviceClient, await polled)).not.toBe('alive');
  });

  it("refuses a refresh when the grant's user is disabled, even if the grant itself was left live", async () => {
    const user = await createUser(app);
    const tokens = await issueTokens(app, helperClient, user, { redirectUrl: LOOPBACK_REDIRECT });
    // As a grant made in the instant of a disable would be: the user is disabled, the grant not revoked.
    await query(app.databaseUrl, 'UPDATE portal_users SET disabled_at = now() WHERE id = $1', [await userId(app, user)]);
    const refused = await refresh(app, helperClient, tokens.refresh_token);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: 'invalid_grant' });
  });

  it('issues only the scopes the client still has at a refresh and at the device poll', async () => {
    const client = await createClient(app, { grants: [DEVICE_GRANT as never, 'authorization_code', 'refresh_token'], redirectPatterns: [LOOPBACK_PATTERN], scopes: [READ, WRITE] });
    const user = await createUser(app);
    const tokens = await issueTokens(app, client, user, { redirectUrl: LOOPBACK_REDIRECT, scope: `${READ} ${WRITE}` });
    const device = await startDeviceAuthorization(app, client, { scope: `${READ} ${WRITE}` });
    await verifyDevice(app, device.user_code, user);

    await app.get(ClientsService).update(client.id, { scopes: [READ] });

    const renewed = await refresh(app, client, tokens.refresh_token);
    expect(renewed.status).toBe(200);
    expect(renewed.body.scope).toBe(READ);
    expect(decodeJwt(renewed.body.access_token as string).scope).toBe(READ);
    const polled = await pollDeviceToken(app, client, device.device_code);
    expect(polled.status).toBe(200);
    expect(polled.body.scope).toBe(READ);
    expect(decodeJwt(polled.body.access_token as string).scope).toBe(READ);
  });

  it('refuses at once, on the instance that revoked it, a grant whose notice has not come back yet', async () => {
    const client = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN], scopes: [SUBSCRIBE_SCOPE] });
    const tokens = await issueTokens(app, client, await createUser(app), { redirectUrl: LOOPBACK_REDIRECT, scope: SUBSCRIBE_SCOPE });
    const history = () => fetch(`${app.baseUrl}/voyage/notification/v1/notifications?after=0`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect((await history()).status).toBe(200);
    // The instance's LISTEN connection is busy for a moment: PostgreSQL holds its notices until it is idle again.
    const listening = (app.get(PgListenerService) as unknown as { client: pg.Client }).client;
    const busy = listening.query('SELECT pg_sleep(1.5)');
    await sleep(100);
    expect((await revoke(app, client, tokens.refresh_token)).status).toBe(200);
    expect((await history()).status).toBe(401);
    await busy;
  });

  it('keeps a sign-in link that a sign-out voided used, after the housekeeping round too', async () => {
    const user = await createUser(app);
    const link = await issueState(app, helperClient.id);
    expect(await signInAgain(link.authorize_url, user)).toBe('signed in');

    await app.get(SignOutsRepository).signOutNow({ userId: await userId(app, user) });
    await app.get(HousekeepingService).purge();

    expect(await signInAgain(link.authorize_url, user)).toBe('This sign-in link was already used');
    expect((await fetch(link.code_url)).status).toBe(404);
  });

  describe('a 503 never spends a code or a refresh token', () => {
    /** The signing keys cannot be read (as when the key ring reloads after its lifetime while the table is locked). */
    async function keysUnreadable() {
      lock = await lockSession(app);
      await lock.query('LOCK TABLE signing_keys IN ACCESS EXCLUSIVE MODE');
      app.get(KeysService).forgetRing();
    }

    it('a code exchange that cannot sign answers 503 and the same code then works', async () => {
      const code = await authorizationCode(app, helperClient, await createUser(app), { redirectUrl: LOOPBACK_REDIRECT });
      await keysUnreadable();
      const failed = await exchangeCode(app, helperClient, code);
      expect(failed.status).toBe(503);
      expect(failed.body).toMatchObject({ error: 'temporarily_unavailable' });
      await lock!.query('ROLLBACK');

      const retried = await exchangeCode(app, helperClient, code);
      expect(retried.status).toBe(200);
      expect((await introspect(app, helperClient, retried.body.access_token as string)).body.active).toBe(true);
    });

    it('a refresh that cannot sign answers 503 and the same refresh token then works (no reuse detected)', async () => {
      const tokens = await issueTokens(app, helperClient, await createUser(app), { redirectUrl: LOOPBACK_REDIRECT });
      await keysUnreadable();
      const failed = await refresh(app, helperClient, tokens.refresh_token);
      expect(failed.status).toBe(503);
      await lock!.query('ROLLBACK');

      const retried = await refresh(app, helperClient, tokens.refresh_token);
      expect(retried.status).toBe(200);
      expect((await refresh(app, helperClient, retried.body.refresh_token as string)).status).toBe(200);
    });
  });
});

describe('the request deadline and a commit under way', () => {
  let app: TestApp;
  let client: TestClient;
  let lock: pg.Client | undefined;

  beforeAll(async () => {
    app = await startTestApp({ REQUEST_TIMEOUT_MS: '1000', DATABASE_LOCK_TIMEOUT_MS: '4000' });
    client = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
  });
  afterAll(async () => {
    await lock?.end().catch(() => {});
    await app?.close();
  });

  it('never answers 503 to a code exchange whose redemption then commits', async () => {
    const code = await authorizationCode(app, client, await createUser(app), { redirectUrl: LOOPBACK_REDIRECT });
    lock = await lockSession(app);
    await lock.query('SELECT 1 FROM authorization_codes WHERE code_hash = $1 FOR UPDATE', [storedHash(code)]);
    const exchanged = exchangeCode(app, client, code);
    // Past the deadline, then the redemption goes through.
    await sleep(1_600);
    await lock.query('ROLLBACK');
    const answer = await exchanged;
    if (answer.status === 503) {
      // A 503 must mean nothing was spent: the retry it invites works.
      expect((await exchangeCode(app, client, code)).status).toBe(200);
    } else expect(answer.status).toBe(200);
  });
});
