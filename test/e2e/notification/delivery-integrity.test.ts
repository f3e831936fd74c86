import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { LISTENER_NAME, PgListenerService } from '../../../src/database/pg-listener.service.js';
import { clientToken, PUBLISH_SCOPE, type PublishBody, publish, SUBSCRIBE_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { createClient } from '../../factories/oauth.factory.js';
import { openStream, type Stream } from '../../factories/stream.factory.js';
import { query } from '../../setup/database.js';
import { startSecondInstance } from '../../setup/instances.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/**
 * What a subscriber can do to its delivery cursor, and what several connections of one client
 * see: pongs are the client's word and are checked; a connection that closes unread holds the
 * cursor for the client's next connection; a connection that opens while its cursor read waits
 * misses nothing; while LISTEN is down, streams are late, never silent.
 */

/** The delivery service writes cursors back every 250 ms. */
const CURSOR_FLUSH_WAIT_MS = 400;
const QUIET_MS = 500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('delivery cursors and several connections of one client', () => {
  let app: TestApp;
  let other: TestApp | undefined;
  let publisherToken: string;
  const streams: Stream[] = [];

  const subscriber = async () => {
    const client = await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
    return { client, token: await clientToken(app, client) };
  };
  const stream = async (token: string, options: { on?: TestApp; autoPong?: boolean } = {}) => {
    const opened = await openStream((options.on ?? app).baseUrl, token, options);
    streams.push(opened);
    return opened;
  };
  const published = async (recipient: string): Promise<PublishBody> => {
    const body = validNotification(recipient);
    const answer = await publish(app, publisherToken, body);
    expect(answer.status).toBe(202);
    return body;
  };
  /** Whether a statement of the service starting with `start` waits for a lock in this test's database. */
  const waitingForLock = async (start: string) =>
    (
      await query<{ waiting: number }>(
        app.databaseUrl,
        `SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND starts_with(ltrim(query), $1)`,
        [start],
      )
    )[0].waiting > 0;
  const cursorOf = async (clientId: string) => {
    const [row] = await query<{ delivered_seq: string }>(app.databaseUrl, 'SELECT delivered_seq FROM delivery_cursors WHERE client_id = $1', [clientId]);
    return row ? Number(row.delivered_seq) : 0;
  };
  const seqOf = async (body: PublishBody) => {
    const [row] = await query<{ seq: string }>(app.databaseUrl, 'SELECT seq FROM notifications WHERE correlation_id = $1', [body.correlationId]);
    return Number(row.seq);
  };

  beforeAll(async () => {
    // The tests that hold a lock on the cursors mean it to be waited for, even on a loaded machine
    // (one test holds it for two polls of up to 10 s and a publish).
    app = await startTestApp({ DATABASE_LOCK_TIMEOUT_MS: '60000' });
    const publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    publisherToken = await clientToken(app, publisher, PUBLISH_SCOPE);
  });
  afterEach(async () => {
    await Promise.all(streams.splice(0).map((opened) => opened.close()));
  });
  afterAll(async () => {
    await other?.close();
    await app?.close();
  });

  it('ignores pongs that echo no delivery ping of the connection: other cursors are saved, and the forger still receives', async () => {
    const forger = await subscriber();
    const honest = await subscriber();
    const forging = await stream(forger.token);
    const reading = await stream(honest.token);
    const earlier = await published(forger.client.id);
    await forging.received(1);
    // Out of range for bigint, not a number, negative, not an integer, huge, never sent, and a repeat of one already answered.
    for (const value of ['1e20', 'Infinity', '9000000000000000000', '-1', '3.5', '0x10', ' 12', '99999999', String(await seqOf(earlier))]) {
      forging.socket.pong(value);
    }

    const body = await published(honest.client.id);
    await reading.received(1);
    await expect.poll(() => cursorOf(honest.client.id), { timeout: 3000, interval: 50 }).toBe(await seqOf(body));

    // The forger's cursor is where its real pong left it; after a reconnect it receives what comes next.
    await forging.close();
    await sleep(CURSOR_FLUSH_WAIT_MS);
    expect(await cursorOf(forger.client.id)).toBe(await seqOf(earlier));
    const again = await stream(forger.token);
    const next = await published(forger.client.id);
    await again.received(1);
    await sleep(QUIET_MS);
    expect(again.ids()).toEqual([next.correlationId]);
  });

  it('gives a second connection what another connection of the client confirmed while the second one’s cursor read was waiting', async () => {
    const { client, token } = await subscriber();
    const first = await stream(token);
    const lock = new pg.Client({ connectionString: app.databaseUrl });
    await lock.connect();
    let second: Stream;
    let body: PublishBody;
    try {
      // Cursor reads and saves wait behind this lock (within this app's DATABASE_LOCK_TIMEOUT_MS).
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE delivery_cursors IN ACCESS EXCLUSIVE MODE');
      second = await stream(token);
      // The second connection's cursor read must be queued behind the lock before anything is
      // published: on a loaded machine it may start later than the stream opens.
      await expect.poll(() => waitingForLock('WITH asked AS'), { timeout: 10_000 }).toBe(true);
      body = await published(client.id);
      await first.received(1);
      // The first connection's pong is in: its cursor save waits behind the lock too.
      await expect.poll(() => waitingForLock('INSERT INTO delivery_cursors'), { timeout: 10_000 }).toBe(true);
    } finally {
      await lock.query('ROLLBACK');
      await lock.end();
    }
    await second.received(1);
    expect(second.ids()).toEqual([body.correlationId]);
  });

  it('holds the cursor for a connection that closed unread: the next connection gets the message again (and passes the hold on if it closes unread too), the one after it does not', async () => {
    const { client, token } = await subscriber();
    const reader = await stream(token);
    const silent = await stream(token, { autoPong: false });
    const body = await published(client.id);
    await reader.received(1);
    await silent.received(1);
    await sleep(CURSOR_FLUSH_WAIT_MS);
    silent.socket.terminate();
    await silent.closed;
    await sleep(CURSOR_FLUSH_WAIT_MS);

    // One that takes the hold over and closes unread too passes it on: here it closes before it was
    // even sent anything (its start waits behind a lock on the cursors).
    const lock = new pg.Client({ connectionString: app.databaseUrl });
    await lock.connect();
    try {
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE delivery_cursors IN ACCESS EXCLUSIVE MODE');
      const gone = await stream(token);
      gone.socket.terminate();
      await gone.closed;
      await sleep(100);
    } finally {
      await lock.query('ROLLBACK');
      await lock.end();
    }
    await sleep(CURSOR_FLUSH_WAIT_MS);

    const next = await stream(token);
    await next.received(1);
    expect(next.ids()).toEqual([body.correlationId]);
    await sleep(CURSOR_FLUSH_WAIT_MS);
    await next.close();
    await sleep(CURSOR_FLUSH_WAIT_MS);

    const after = await stream(token);
    const barrier = await published(client.id);
    await after.received(1);
    await sleep(QUIET_MS);
    expect(after.ids()).toEqual([barrier.correlationId]);
    expect(reader.ids()).toEqual([body.correlationId, barrier.correlationId]);
  });

  it('holds the cursor across instances: a connection closed unread on one instance, while another confirmed on the other', async () => {
    other ??= await startSecondInstance(app);
    const { client, token } = await subscriber();
    const reader = await stream(token, { on: other });
    const silent = await stream(token, { autoPong: false });
    const body = await published(client.id);
    await reader.received(1);
    await silent.received(1);
    await expect.poll(() => cursorOf(client.id), { timeout: 3000, interval: 50 }).toBe(await seqOf(body));
    silent.socket.terminate();
    await silent.closed;
    await sleep(CURSOR_FLUSH_WAIT_MS);

    const next = await stream(token, { on: other });
    await next.received(1);
    expect(next.ids()).toEqual([body.correlationId]);
  });

  it('keeps pushing while the LISTEN connection is down (late by about a second, never silent)', async () => {
    const { client, token } = await subscriber();
    const listening = await stream(token);
    const database = new URL(app.databaseUrl).pathname.slice(1);
    // Another database of the server: a database cannot refuse connections from inside itself.
    const admin = new pg.Client({ connectionString: inject('adminDatabaseUrl') });
    await admin.connect();
    try {
      // No new connection is let in (the pool's open ones keep working); the listener's is cut and cannot come back.
      await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = $2', [LISTENER_NAME, database]);
      await expect.poll(() => app.get(PgListenerService).isListening, { timeout: 5000, interval: 20 }).toBe(false);
      await sleep(4000); // the listener's retry delay has grown to seconds
      const body = await published(client.id);
      const started = Date.now();
      await listening.received(1, 2500);
      expect(Date.now() - started).toBeLessThan(2500);
      expect(listening.ids()).toEqual([body.correlationId]);
    } finally {
      await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`);
      await admin.end();
    }
    await expect.poll(() => app.get(PgListenerService).isListening, { timeout: 10_000, interval: 50 }).toBe(true);
  });
});
