import { decodeJwt } from 'jose';
import pg from 'pg';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsRepository } from '../../../src/clients/clients.repository.js';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { type AccessTokenClaims, AccessTokensService } from '../../../src/token/access-tokens.service.js';
import { clientToken, SUBSCRIBE_SCOPE } from '../../factories/notification.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { openV2 } from '../../factories/stream-clients.js';
import { openStream, type Stream } from '../../factories/stream.factory.js';
import { issueTokens, LOOPBACK_PATTERN, LOOPBACK_REDIRECT, type PortalUser, refresh, revoke } from '../../factories/token-flow.factory.js';
import { query } from '../../setup/database.js';
import { reconnectListeners, startSecondInstance } from '../../setup/instances.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const HISTORY = '/voyage/notification/v1/notifications?since=2020-01-01T00:00:00.000Z';

/** The HTTP status a stream upgrade with `token` gets (101 when it opens). */
function upgradeStatus(app: TestApp, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${app.baseUrl.replace('http', 'ws')}/voyage/notification/v1/ws/products`, { headers: { authorization: `Bearer ${token}` } });
    socket.on('open', () => {
      socket.close();
      resolve(101);
    });
    socket.on('unexpected-response', (_request, response) => resolve(response.statusCode!));
    socket.on('error', reject);
  });
}

const historyStatus = async (app: TestApp, token: string) =>
  (await fetch(`${app.baseUrl}${HISTORY}`, { headers: { authorization: `Bearer ${token}` } })).status;

/** Resolves with the close code, or 'open' if the stream is still open after `ms`. */
const closedWithin = (stream: { closed: Promise<{ code: number }> }, ms: number) =>
  Promise.race([stream.closed.then(({ code }) => code), new Promise<'open'>((resolve) => setTimeout(() => resolve('open'), ms))]);

describe('stream connections per client', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ WS_MAX_CONNECTIONS_PER_CLIENT: '2' });
  });
  afterAll(() => app.close());

  it("closes a client's connection beyond WS_MAX_CONNECTIONS_PER_CLIENT with 1008, while other clients still connect", async () => {
    const greedy = await createClient(app, { grants: ['client_credentials'] });
    const token = await clientToken(app, greedy);
    const kept = [await openStream(app.baseUrl, token), await openStream(app.baseUrl, token)];
    const third = await openStream(app.baseUrl, token);
    expect(await closedWithin(third, 2_000)).toBe(1008);
    for (const stream of kept) expect(await closedWithin(stream, 100)).toBe('open');

    const other = await openStream(app.baseUrl, await clientToken(app, await createClient(app, { grants: ['client_credentials'] })));
    expect(await closedWithin(other, 300)).toBe('open');
    // A place freed is a place to take.
    await kept[0].close();
    await expect.poll(async () => closedWithin(await openStream(app.baseUrl, token), 300), { timeout: 3_000 }).toBe('open');
    for (const stream of [kept[1], other]) await stream.close();
  });
});

describe('revocation reaches open streams on every instance', () => {
  let first: TestApp;
  let second: TestApp;
  let user: PortalUser;
  /** A client-credentials subscriber. */
  let device: TestClient;
  /** A user-facing client whose tokens may subscribe too. */
  let app: TestClient;

  beforeAll(async () => {
    first = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0' });
    second = await startSecondInstance(first, { CODE_POLL_MIN_INTERVAL: '0' });
    user = await createUser(first);
    device = await createClient(first, { grants: ['client_credentials'] });
    app = await createClient(first, { redirectPatterns: [LOOPBACK_PATTERN], scopes: [SUBSCRIBE_SCOPE] });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it('closes the streams of an access token revoked at /sso/revoke, on both instances, and only those', async () => {
    const revoked = await clientToken(first, device);
    const other = await clientToken(first, device);
    const streams = [await openStream(first.baseUrl, revoked), await openStream(second.baseUrl, revoked)];
    const bystander = await openStream(second.baseUrl, other);
    expect((await revoke(first, device, revoked)).status).toBe(200);
    for (const stream of streams) expect(await closedWithin(stream, 3_000)).toBe(1008);
    expect(await closedWithin(bystander, 200)).toBe('open');
    expect(await upgradeStatus(second, revoked)).toBe(401);
    await bystander.close();
  });

  it('closes the streams of a grant revoked by a reused refresh token, and refuses its tokens at the notification routes', async () => {
    const issued = await issueTokens(first, app, user, { redirectUrl: LOOPBACK_REDIRECT, scope: SUBSCRIBE_SCOPE });
    const rotated = (await refresh(first, app, issued.refresh_token)).body as { access_token: string };
    const streams = [await openStream(first.baseUrl, issued.access_token), await openStream(second.baseUrl, rotated.access_token)];
    expect(await historyStatus(second, rotated.access_token)).toBe(200);

    // The first refresh token again: theft, so the whole grant is revoked.
    expect((await refresh(first, app, issued.refresh_token)).status).toBe(400);
    for (const stream of streams) expect(await closedWithin(stream, 3_000)).toBe(1008);
    for (const instance of [first, second]) {
      expect(await historyStatus(instance, rotated.access_token)).toBe(401);
      expect(await upgradeStatus(instance, issued.access_token)).toBe(401);
    }
  });

  it('closes the streams of a grant whose code was replayed', async () => {
    const code = await issueTokensWithCode();
    const stream = await openStream(second.baseUrl, code.tokens.access_token);
    expect((await code.replay()).status).toBe(400);
    expect(await closedWithin(stream, 3_000)).toBe(1008);
  });

  it("closes a disabled client's streams on both instances", async () => {
    const disabled = await createClient(first, { grants: ['client_credentials'] });
    const token = await clientToken(first, disabled);
    const streams = [await openStream(first.baseUrl, token), await openStream(second.baseUrl, token)];
    await first.get(ClientsService).setEnabled(disabled.id, false);
    for (const stream of streams) expect(await closedWithin(stream, 3_000)).toBe(1008);
  });

  it('closes streams whose revocation notice was lost, once the instance listens again', async () => {
    const revokedToken = await clientToken(first, device);
    const grantTokens = await issueTokens(first, app, user, { redirectUrl: LOOPBACK_REDIRECT, scope: SUBSCRIBE_SCOPE });
    const disabled = await createClient(first, { grants: ['client_credentials'] });
    const streams = [
      await openStream(second.baseUrl, revokedToken),
      await openStream(second.baseUrl, grantTokens.access_token),
      await openStream(second.baseUrl, await clientToken(first, disabled)),
    ];
    // Revoked, disabled, without any NOTIFY: as if each was sent while the listeners were disconnected.
    const claims = decodeJwt(revokedToken);
    await query(first.databaseUrl, 'INSERT INTO revoked_access_tokens (jti, expires_at) VALUES ($1, to_timestamp($2))', [claims.jti, claims.exp]);
    await query(first.databaseUrl, 'UPDATE grants SET revoked_at = now() WHERE id = $1', [decodeJwt(grantTokens.access_token).sid]);
    await query(first.databaseUrl, 'UPDATE clients SET enabled = false WHERE id = $1', [disabled.id]);
    for (const stream of streams) expect(await closedWithin(stream, 300)).toBe('open');

    await reconnectListeners(second);
    for (const stream of streams) expect(await closedWithin(stream, 3_000)).toBe(1008);
    expect(await historyStatus(second, grantTokens.access_token)).toBe(401);
  });

  /** A code exchanged once, and a way to present it again. */
  async function issueTokensWithCode() {
    const { authorizationCode, exchangeCode } = await import('../../factories/token-flow.factory.js');
    const value = await authorizationCode(first, app, user, { redirectUrl: LOOPBACK_REDIRECT });
    const exchanged = await exchangeCode(first, app, value, { scope: SUBSCRIBE_SCOPE });
    expect(exchanged.status).toBe(200);
    return { tokens: exchanged.body as { access_token: string }, replay: () => exchangeCode(first, app, value, { scope: SUBSCRIBE_SCOPE }) };
  }
});

describe('a revocation that lands while a stream is being let in', () => {
  let first: TestApp;
  /** Its reads wait on the test's lock rather than give up after the default 2 s. */
  let second: TestApp;
  let user: PortalUser;

  beforeAll(async () => {
    first = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0' });
    second = await startSecondInstance(first, { CODE_POLL_MIN_INTERVAL: '0', DATABASE_LOCK_TIMEOUT_MS: '15000' });
    user = await createUser(first);
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  /**
   * Runs `check` on `second` held between its revocation check and what follows it: `second` has
   * not seen (or has forgotten) the token's client, so after checking the revoked tokens and
   * grants it reads the client, and waits behind a lock on `clients` held from the test's own
   * session. `revokeMeanwhile` runs while it waits (and `second` hears of it); the check goes on
   * once the lock goes.
   */
  async function revokeWhileChecking(check: () => void, token: string, revokeMeanwhile: () => Promise<void>): Promise<void> {
    const session = new pg.Client({ connectionString: first.databaseUrl });
    await session.connect();
    try {
      await session.query('BEGIN');
      await session.query('LOCK TABLE clients IN ACCESS EXCLUSIVE MODE');
      check();
      // The only lock there is to wait for is this one (the heartbeat may read the client behind it too).
      const waiting = async () =>
        (await session.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'voyage-connect' AND wait_event_type = 'Lock'")).rowCount ?? 0;
      // Bounded generously: on a busy machine the check may take seconds to reach the lock.
      await expect.poll(waiting, { timeout: 20_000, interval: 20 }).toBeGreaterThanOrEqual(1);
      await revokeMeanwhile();
      // The second instance has heard of it: what it closes now, it closes without this stream.
      await expect.poll(() => second.get(AccessTokensService).isRevoked(decodeJwt(token) as unknown as AccessTokenClaims), { timeout: 20_000, interval: 20 }).toBe(true);
    } finally {
      await session.query('ROLLBACK').finally(() => session.end());
    }
  }

  /** Opens a stream on `second` whose upgrade is held between its revocation check and its registration (revokeWhileChecking). */
  async function openWhileRevoked(token: string, revokeMeanwhile: () => Promise<void>): Promise<Stream> {
    let opening: Promise<Stream> | undefined;
    await revokeWhileChecking(
      () => {
        opening = openStream(second.baseUrl, token);
        opening.catch(() => {}); // awaited below, unless a step before fails
      },
      token,
      revokeMeanwhile,
    );
    return opening!;
  }

  it('closes with 1008 a stream whose access token was revoked at /sso/revoke meanwhile', async () => {
    const device = await createClient(first, { grants: ['client_credentials'] });
    const token = await clientToken(first, device);
    const stream = await openWhileRevoked(token, async () => {
      expect((await revoke(first, device, token)).status).toBe(200);
    });
    expect(await closedWithin(stream, 3_000)).toBe(1008);
    expect(await upgradeStatus(second, token)).toBe(401);
  });

  it('closes with 1008 a stream whose grant was revoked meanwhile (its refresh token revoked at /sso/revoke)', async () => {
    const app = await createClient(first, { redirectPatterns: [LOOPBACK_PATTERN], scopes: [SUBSCRIBE_SCOPE] });
    const issued = await issueTokens(first, app, user, { redirectUrl: LOOPBACK_REDIRECT, scope: SUBSCRIBE_SCOPE });
    const stream = await openWhileRevoked(issued.access_token, async () => {
      expect((await revoke(first, app, issued.refresh_token)).status).toBe(200);
    });
    expect(await closedWithin(stream, 3_000)).toBe(1008);
  });

  it('closes with 1008 a protocol v2 stream whose replacement token was revoked while the replacement was being checked', async () => {
    const device = await createClient(first, { grants: ['client_credentials'] });
    const stream = await openV2(second.baseUrl, await clientToken(first, device));
    try {
      const replacement = await clientToken(first, device);
      await revokeWhileChecking(
        () => {
          // Read at the upgrade: forgotten once the lock is held (a read in between, by the
          // heartbeat say, would cache it again), the replacement's check reads it behind the lock.
          second.get(ClientsRepository).forget(device.id);
          stream.replaceToken(replacement);
        },
        replacement,
        async () => {
          expect((await revoke(first, device, replacement)).status).toBe(200);
        },
      );
      expect(await closedWithin(stream, 3_000)).toBe(1008);
    } finally {
      stream.close();
    }
  });
});
