import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureDatabase, type EmbeddedPostgres, startEmbeddedPostgres } from '../../../src/database/embedded-postgres.js';
import { HousekeepingService } from '../../../src/database/housekeeping.service.js';
import { clientToken, PUBLISH_SCOPE, type PublishBody, publish, SUBSCRIBE_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { DEVICE_GRANT, pollDeviceToken, startDeviceAuthorization } from '../../factories/device-flow.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { openStream, type Stream } from '../../factories/stream.factory.js';
import { credentials, postForm, storedHash } from '../../factories/token-flow.factory.js';
import { query } from '../../setup/database.js';
import { freePort } from '../../setup/free-port.js';
import { startSecondInstance } from '../../setup/instances.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/**
 * The database misbehaving, seen from callers: every wait is bounded, a lock on one recipient
 * or on the cursor table stalls nobody else, one bad publish fails nobody else, an unreachable
 * database is a 503 with Retry-After (never a 500), and expired notifications are gone.
 */

/** The service's default lock_timeout (DATABASE_LOCK_TIMEOUT_MS) is 2 s; the test locks last longer. */
const LOCK_HOLD_MS = 4_000;
/** First key of the per-recipient publish lock (NotificationsRepository). */
const PUBLISH_LOCK_CLASS = 7_042_002;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `request` and measures how long its answer took. */
async function timed<T>(request: () => Promise<T>): Promise<{ answer: T; ms: number }> {
  const started = Date.now();
  const answer = await request();
  return { answer, ms: Date.now() - started };
}

/** Holds a lock on its own connection until `release` is called. */
async function holdLock(databaseUrl: string, statements: string[], params: unknown[] = []) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query('BEGIN');
  for (const sql of statements) await client.query(sql, sql.includes('$1') ? params : []);
  return {
    async release() {
      await client.query('ROLLBACK');
      await client.end();
    },
  };
}

const tokenRequest = (app: TestApp, client: TestClient) =>
  fetch(`${app.baseUrl}/public/api/oauth2/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret }),
  });

describe('locks and bad input on the publish path', () => {
  let app: TestApp;
  let publisherToken: string;
  let subscriberClient: TestClient;
  const streams: Stream[] = [];

  const recipient = () => createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });

  beforeAll(async () => {
    app = await startTestApp();
    const publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    publisherToken = await clientToken(app, publisher, PUBLISH_SCOPE);
    subscriberClient = await recipient();
  });
  afterEach(async () => {
    await Promise.all(streams.splice(0).map((opened) => opened.close()));
  });
  afterAll(() => app?.close());

  it('answers a NUL in a text field with its own 400 while the publishes sent with it are stored', async () => {
    for (let round = 0; round < 3; round++) {
      const good = Array.from({ length: 20 }, () => validNotification(subscriberClient.id));
      const bad = validNotification(subscriberClient.id, { status: 'New\u0000' });
      const answers = await Promise.all([...good.slice(0, 10), bad, ...good.slice(10)].map((body) => publish(app, publisherToken, body)));
      const badAnswer = answers.splice(10, 1)[0];
      expect(badAnswer.status).toBe(400);
      expect(badAnswer.body.errors).toEqual(['status must not contain control characters']);
      expect(answers.map((answer) => answer.status)).toEqual(good.map(() => 202));
    }
    for (const field of ['recipient', 'productName', 'origin', 'customerReferenceId'] as const) {
      const answer = await publish(app, publisherToken, validNotification(subscriberClient.id, { [field]: 'a\u0000b' }));
      expect(answer.status, field).toBe(400);
    }
    const inList = await publish(app, publisherToken, validNotification(subscriberClient.id, { warnings: ['fine', 'not\u0000fine'] }));
    expect(inList.status).toBe(400);
  });

  it("keeps publishing to other recipients, and issuing tokens, while one recipient's publish lock is held elsewhere", async () => {
    const locked = await recipient();
    const free = await recipient();
    const lock = await holdLock(app.databaseUrl, ['SELECT pg_advisory_xact_lock($1, hashtext($2))'], [PUBLISH_LOCK_CLASS, locked.id]);
    try {
      const stuck = timed(() => publish(app, publisherToken, validNotification(locked.id)));
      await sleep(100); // the stuck publish is in flight first
      const others = await Promise.all(Array.from({ length: 10 }, () => timed(() => publish(app, publisherToken, validNotification(free.id)))));
      for (const { answer, ms } of others) {
        expect(answer.status).toBe(202);
        expect(ms).toBeLessThan(1000);
      }
      const token = await timed(() => tokenRequest(app, free));
      expect(token.answer.status).toBe(200);
      expect(token.ms).toBeLessThan(1000);

      // The stuck one is answered when the lock wait runs out: try again later.
      const { answer, ms } = await stuck;
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toBe('1');
      expect(answer.body).toEqual({ message: 'Service temporarily unavailable: try again shortly', correlationId: expect.any(String) });
      expect(ms).toBeLessThan(LOCK_HOLD_MS);
    } finally {
      await lock.release();
    }
    const retried = validNotification(locked.id);
    const subscriber = await openStream(app.baseUrl, await clientToken(app, locked));
    streams.push(subscriber);
    expect((await publish(app, publisherToken, retried)).status).toBe(202);
    await subscriber.received(1);
    expect(subscriber.ids()).toEqual([retried.correlationId]);
  });

  it('bounds a publish that waits behind a lock on the notifications table, and keeps the token routes working', async () => {
    const lock = await holdLock(app.databaseUrl, ['LOCK TABLE notifications IN ACCESS EXCLUSIVE MODE']);
    try {
      const stuck = timed(() => publish(app, publisherToken, validNotification(subscriberClient.id)));
      const token = await timed(() => tokenRequest(app, subscriberClient));
      expect(token.answer.status).toBe(200);
      expect(token.ms).toBeLessThan(1000);
      const { answer, ms } = await stuck;
      expect(answer.status).toBe(503);
      expect(ms).toBeLessThan(LOCK_HOLD_MS);
    } finally {
      await lock.release();
    }
    expect((await publish(app, publisherToken, validNotification(subscriberClient.id))).status).toBe(202);
  });

  it('saves cursors one batch at a time: a slow cursor table takes no more than one pooled connection, and says so once', async () => {
    const small = await startSecondInstance(app, { DATABASE_POOL_SIZE: '3' });
    try {
      const reader = await recipient();
      const stream = await openStream(small.baseUrl, await clientToken(small, reader));
      streams.push(stream);
      const lock = await holdLock(app.databaseUrl, ['LOCK TABLE delivery_cursors IN ACCESS EXCLUSIVE MODE']);
      try {
        // A confirmed delivery gives the service a cursor to save every 250 ms, while the table is locked.
        expect((await publish(small, publisherToken, validNotification(reader.id))).status).toBe(202);
        await stream.received(1);
        for (let second = 0; second < LOCK_HOLD_MS / 1000; second++) {
          await sleep(1000);
          const { answer, ms } = await timed(() => publish(small, publisherToken, validNotification(subscriberClient.id)));
          expect(answer.status).toBe(202);
          expect(ms).toBeLessThan(1000);
          expect((await fetch(`${small.baseUrl}/health`)).status).toBe(200);
        }
      } finally {
        await lock.release();
      }
      const warnings = small.logs.filter((line) => String(line.msg).startsWith('could not save delivery cursors'));
      expect(warnings.length).toBe(1);
      const metrics = await (await fetch(`${small.baseUrl}/metrics`)).text();
      expect(Number(/^delivery_cursor_flush_failures_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
      expect(Number(/^database_unavailable_errors_total\{reason="lock"\} (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
      await expect.poll(() => small.logs.some((line) => String(line.msg).startsWith('delivery cursors saved again')), { timeout: 3000 }).toBe(true);
    } finally {
      await small.close();
    }
  });
});

describe('locks on the device flow', () => {
  let app: TestApp;
  let tv: TestClient;

  beforeAll(async () => {
    app = await startTestApp();
    tv = await createClient(app, { grants: [DEVICE_GRANT] });
  });
  afterAll(() => app?.close());

  it('bounds a poll that waits behind a lock on its device code, keeps other devices polling, and does not count the refused poll', async () => {
    const [locked, other] = [await startDeviceAuthorization(app, tv), await startDeviceAuthorization(app, tv)];
    const lock = await holdLock(app.databaseUrl, ['SELECT 1 FROM device_codes WHERE device_code_hash = $1 FOR UPDATE'], [storedHash(locked.device_code)]);
    try {
      const stuck = timed(() => pollDeviceToken(app, tv, locked.device_code));
      const free = await timed(() => pollDeviceToken(app, tv, other.device_code));
      expect(free.answer.body).toMatchObject({ error: 'authorization_pending' });
      expect(free.ms).toBeLessThan(1_000);
      const { answer, ms } = await stuck;
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ error: 'temporarily_unavailable' });
      expect(answer.headers.get('retry-after')).toBe('1');
      expect(ms).toBeLessThan(LOCK_HOLD_MS);
    } finally {
      await lock.release();
    }
    expect((await pollDeviceToken(app, tv, locked.device_code)).body).toMatchObject({ error: 'authorization_pending' });
  });
});

describe('retention', () => {
  let app: TestApp;
  let publisherToken: string;

  beforeAll(async () => {
    app = await startTestApp();
    const publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    publisherToken = await clientToken(app, publisher, PUBLISH_SCOPE);
  });
  afterAll(() => app?.close());

  const expire = (body: PublishBody) =>
    query(app.databaseUrl, "UPDATE notifications SET expires_at = now() - interval '1 second' WHERE correlation_id = $1", [body.correlationId]);

  it('stores and delivers anew a notification published again after its stored copy expired', async () => {
    const client = await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
    const body = validNotification(client.id);
    const first = await publish(app, publisherToken, body);
    await expire(body);
    const again = await publish(app, publisherToken, body);
    expect(again.status).toBe(202);
    expect(again.body.id).not.toBe(first.body.id);
    const stream = await openStream(app.baseUrl, await clientToken(app, client));
    try {
      await stream.received(1);
      expect(stream.ids()).toEqual([body.correlationId]);
    } finally {
      await stream.close();
    }
    // A repeat of the live copy is still a repeat.
    expect((await publish(app, publisherToken, body)).body.id).toBe(again.body.id);
  });

  it('deletes expired notifications in the housekeeping round, and nothing else', async () => {
    const client = await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
    const expired = Array.from({ length: 3 }, () => validNotification(client.id));
    const live = validNotification(client.id);
    for (const body of [...expired, live]) expect((await publish(app, publisherToken, body)).status).toBe(202);
    for (const body of expired) await expire(body);

    await app.get(HousekeepingService).purge();
    const left = await query<{ correlation_id: string }>(app.databaseUrl, 'SELECT correlation_id FROM notifications WHERE recipient = $1', [client.id]);
    expect(left.map((row) => row.correlation_id)).toEqual([live.correlationId]);
  });
});

describe('while PostgreSQL is unreachable', () => {
  let dataDir: string;
  let port: number;
  let server: EmbeddedPostgres;
  let app: TestApp;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'voyage-connect-outage-'));
    port = await freePort();
    server = await startEmbeddedPostgres({ dataDir, port });
    await ensureDatabase(server.url(), 'app');
    app = await startTestApp({}, server.url('app'));
  });
  afterAll(async () => {
    await app?.close();
    await server?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('answers 503 with Retry-After within seconds on every route that needs it, then works again without a restart', async () => {
    const publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    const helperClient = await createClient(app);
    // Never authenticated yet, so not in the instance's client cache: its token request needs the database.
    const uncached = await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
    const publisherToken = await clientToken(app, publisher, PUBLISH_SCOPE);
    const { state } = await issueState(app, helperClient.id);
    const tv = await createClient(app, { grants: [DEVICE_GRANT] });
    const { device_code } = await startDeviceAuthorization(app, tv);
    const calls = {
      publish: () => publish(app, publisherToken, validNotification(publisher.id)).then((answer) => ({ status: answer.status, headers: answer.headers, body: answer.body })),
      token: async () => {
        const response = await tokenRequest(app, uncached);
        return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
      },
      poll: async () => {
        const response = await fetch(`${app.baseUrl}/external/oauth2helper/code/get/${helperClient.id}?state=${state}`);
        return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
      },
      deviceAuthorization: () => postForm(app, '/sso/device_authorization', credentials(tv)),
      devicePoll: () => pollDeviceToken(app, tv, device_code),
    };
    await server.stop();

    for (const [name, call] of Object.entries(calls)) {
      const { answer, ms } = await timed(call);
      expect(answer.status, `${name}: ${JSON.stringify(answer.body)}`).toBe(503);
      expect(answer.headers.get('retry-after'), name).toBe('1');
      expect(ms, name).toBeLessThan(5000);
      if (name !== 'publish') expect(answer.body.error, name).toBe('temporarily_unavailable');
    }

    server = await startEmbeddedPostgres({ dataDir, port });
    await expect.poll(async () => (await calls.publish()).status, { timeout: 10_000, interval: 200 }).toBe(202);
    expect((await calls.token()).status).toBe(200);
    const fresh = await issueState(app, helperClient.id);
    expect((await fetch(`${app.baseUrl}/external/oauth2helper/code/get/${helperClient.id}?state=${fresh.state}`)).status).toBe(404); // no code yet
    // The polls refused during the outage were not recorded: this one is not slow_down.
    expect((await calls.devicePoll()).body).toMatchObject({ error: 'authorization_pending' });
  });
});
