import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ensureDatabase, type EmbeddedPostgres, startEmbeddedPostgres } from '../../../src/database/embedded-postgres.js';
import { clientToken, PUBLISH_SCOPE, type PublishBody, publish as publishNotification, pushedMessage, SUBSCRIBE_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { openStream, type Stream } from '../../factories/stream.factory.js';
import { query } from '../../setup/database.js';
import { freePort } from '../../setup/free-port.js';
import { type ServiceProcess, startServiceOn } from '../../setup/processes.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/**
 * Delivery of report notifications (the notification service) seen from real
 * `ws` clients: exact payloads, fan-out to every connection of the recipient and to no one else,
 * publish order, replay after a disconnect without repeats, dedupe, retention, several instances
 * on one database, a lost wake-up, a restart of the service and a restart of PostgreSQL.
 *
 * Waits are bounded: a "nothing else arrives" check is a short quiet period, and wherever
 * possible it is closed by a barrier (a later notification that must arrive, and arrive last).
 */

const STREAM_PATH = '/voyage/notification/v1/ws/products';
const PUBLISH_PATH = '/voyage/notification/v1/notifications';
/** The notification's fields, in their documented order. */
const NOTIFICATION_FIELDS = [
  'correlationId',
  'productName',
  'origin',
  'status',
  'statusTimestamp',
  'deliverables',
  'customerReferenceId',
  'routeCalculationScheduleId',
  'warnings',
  'creationDate',
];
/** The delivery service writes cursors back every 250 ms. */
const CURSOR_FLUSH_WAIT_MS = 400;
/** How long "nothing more arrives" is watched for. */
const QUIET_MS = 500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The factory's helpers take an app; a spawned service is reached by its base URL only. */
const at = (baseUrl: string) => ({ baseUrl }) as TestApp;

const tokenFor = (baseUrl: string, client: TestClient, scope?: string) => clientToken(at(baseUrl), client, scope);

/** A notification for `recipient` with fresh ids (the publish body lists recipient first). */
const notification = (recipient: string, overrides: Partial<PublishBody> = {}) => validNotification(recipient, overrides);
const pushed = pushedMessage;

/** POST a notification; it must be accepted with 202 `{id}`. */
async function publish(baseUrl: string, token: string, body: PublishBody): Promise<string> {
  const answer = await publishNotification(at(baseUrl), token, body);
  if (answer.status !== 202 || typeof answer.body?.id !== 'string') throw new Error(`publish answered ${answer.status} ${answer.text}`);
  return answer.body.id;
}

/** Publishes all bodies with at most `inFlight` requests open at a time. */
async function publishAll(baseUrl: string, token: string, bodies: PublishBody[], inFlight: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) await publish(baseUrl, token, bodies[next++]);
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

const streams: Stream[] = [];

async function connect(baseUrl: string, token: string): Promise<Stream> {
  const stream = await openStream(baseUrl, token);
  streams.push(stream);
  return stream;
}

async function closeAllStreams() {
  await Promise.all(streams.splice(0).map((stream) => stream.close()));
}

const storedOrder = async (databaseUrl: string, recipient: string) =>
  (await query<{ correlation_id: string }>(databaseUrl, 'SELECT correlation_id FROM notifications WHERE recipient = $1 ORDER BY seq', [recipient])).map(
    (row) => row.correlation_id,
  );

const health = async (baseUrl: string) => {
  const response = await fetch(`${baseUrl}/health`);
  return { status: response.status, body: (await response.json()) as Record<string, string> };
};

describe('notification delivery over the stream', () => {
  let app: TestApp;
  let publisher: TestClient;
  let publisherToken: string;

  /** A new subscribing client and a stream token for it on `on`. */
  const subscriber = async (on: TestApp = app) => {
    const client = await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
    return { client, token: await tokenFor(on.baseUrl, client) };
  };

  beforeAll(async () => {
    app = await startTestApp();
    publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    publisherToken = await tokenFor(app.baseUrl, publisher, PUBLISH_SCOPE);
  });
  afterEach(closeAllStreams);
  afterAll(async () => {
    await closeAllStreams();
    await app?.close();
  });

  it('pushes exactly the notification fields, in their documented order, one notification per text message', async () => {
    const { client, token } = await subscriber();
    const stream = await connect(app.baseUrl, token);
    const first = notification(client.id);
    const second = notification(client.id, { status: 'Updated', warnings: [], deliverables: [{ productType: 'rtz' }] });
    await publish(app.baseUrl, publisherToken, first);
    await publish(app.baseUrl, publisherToken, second);

    await stream.received(2);
    await sleep(QUIET_MS);
    expect(stream.binary).toBe(0);
    expect(stream.raw).toHaveLength(2);
    expect(stream.messages).toEqual([pushed(first), pushed(second)]);
    for (const message of stream.messages) expect(Object.keys(message)).toEqual(NOTIFICATION_FIELDS);
    expect(stream.raw[0]).not.toContain('recipient');
    expect(stream.raw[0]).not.toContain(client.id);
  });

  it('reaches every live connection of the recipient and no other client, in its stream or its history', async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    const recipient = await subscriber();
    const other = await subscriber();
    const one = await connect(app.baseUrl, recipient.token);
    const two = await connect(app.baseUrl, recipient.token);
    const outsider = await connect(app.baseUrl, other.token);

    const body = notification(recipient.client.id);
    await publish(app.baseUrl, publisherToken, body);
    await one.received(1);
    await two.received(1);
    expect(one.messages).toEqual([pushed(body)]);
    expect(two.messages).toEqual([pushed(body)]);

    // Barrier: the outsider's own notification arrives, and is the only thing it ever got.
    const own = notification(other.client.id);
    await publish(app.baseUrl, publisherToken, own);
    await outsider.received(1);
    await sleep(QUIET_MS);
    expect(outsider.ids()).toEqual([own.correlationId]);
    expect(one.ids()).toEqual([body.correlationId]);
    expect(two.ids()).toEqual([body.correlationId]);

    const history = async (token: string) => {
      const response = await fetch(`${app.baseUrl}${PUBLISH_PATH}?since=${encodeURIComponent(since)}`, { headers: { authorization: `Bearer ${token}` } });
      expect(response.status).toBe(200);
      return ((await response.json()) as { correlationId: string }[]).map((entry) => entry.correlationId);
    };
    expect(await history(recipient.token)).toEqual([body.correlationId]);
    expect(await history(other.token)).toEqual([own.correlationId]);
  });

  it('keeps publish order for a burst of 200 published one after another', async () => {
    const { client, token } = await subscriber();
    const stream = await connect(app.baseUrl, token);
    const bodies = Array.from({ length: 200 }, () => notification(client.id));
    await publishAll(app.baseUrl, publisherToken, bodies, 1);

    await stream.received(200, 10_000);
    await sleep(QUIET_MS);
    const stored = await storedOrder(app.databaseUrl, client.id);
    expect(stored).toEqual(bodies.map((body) => body.correlationId));
    expect(stream.ids()).toEqual(stored);
  });

  it('keeps the stored order, and loses nothing, for a burst of 200 with 16 publishes in flight', async () => {
    const { client, token } = await subscriber();
    const stream = await connect(app.baseUrl, token);
    const bodies = Array.from({ length: 200 }, () => notification(client.id));
    await publishAll(app.baseUrl, publisherToken, bodies, 16);

    const stored = await storedOrder(app.databaseUrl, client.id);
    expect(new Set(stored)).toEqual(new Set(bodies.map((body) => body.correlationId)));
    // On a timeout, which ones never arrived is the useful part of the failure.
    await stream.received(200, 10_000).catch(() => {});
    await sleep(QUIET_MS);
    expect(stored.filter((id) => !stream.ids().includes(id))).toEqual([]);
    expect(stream.ids()).toEqual(stored);
  });

  it('loses nothing when an earlier publish commits after a later one (a slow transaction in flight)', async () => {
    const { client, token } = await subscriber();
    const stream = await connect(app.baseUrl, token);
    const slow = notification(client.id);
    const quick = notification(client.id);

    // Another writer's transaction holds the same notification key, uncommitted: the publish of
    // `slow` stops in the middle of its insert until that transaction ends.
    const holder = new pg.Client({ connectionString: app.databaseUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(
        `INSERT INTO notifications (recipient, correlation_id, status, payload, expires_at)
         VALUES ($1, $2, $3, $4, now() + interval '1 hour')`,
        [client.id, slow.correlationId, slow.status, JSON.stringify(pushed(slow))],
      );
      const slowPublish = publish(app.baseUrl, publisherToken, slow);
      await expect
        .poll(async () => (await holder.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")).rows[0].n, {
          timeout: 5000,
          interval: 20,
        })
        .toBeGreaterThan(0);
      const quickPublish = publish(app.baseUrl, publisherToken, quick);
      // Time for `quick` to commit and be pushed if the service lets it overtake `slow`.
      await sleep(300);
      await holder.query('ROLLBACK');
      await Promise.all([slowPublish, quickPublish]);
    } finally {
      await holder.end();
    }

    const stored = await storedOrder(app.databaseUrl, client.id);
    expect(new Set(stored)).toEqual(new Set([slow.correlationId, quick.correlationId]));
    await stream.received(2, 3000).catch(() => {});
    await sleep(QUIET_MS);
    expect(stream.ids()).toEqual(stored);
  });

  it('pushes what was published while offline on the next connect, in order, and never again', async () => {
    const { client, token } = await subscriber();
    const offline = Array.from({ length: 3 }, () => notification(client.id));
    for (const body of offline) await publish(app.baseUrl, publisherToken, body);

    const first = await connect(app.baseUrl, token);
    await first.received(3);
    expect(first.messages).toEqual(offline.map(pushed));
    await first.close();
    await sleep(CURSOR_FLUSH_WAIT_MS);

    // Nothing replayed: a live publish is the first (and only) thing the next connection gets.
    const second = await connect(app.baseUrl, token);
    const live = notification(client.id);
    await sleep(200);
    await publish(app.baseUrl, publisherToken, live);
    await second.received(1);
    await sleep(QUIET_MS);
    expect(second.ids()).toEqual([live.correlationId]);
    await second.close();
    await sleep(CURSOR_FLUSH_WAIT_MS);

    const missed = [notification(client.id), notification(client.id)];
    for (const body of missed) await publish(app.baseUrl, publisherToken, body);
    const third = await connect(app.baseUrl, token);
    await third.received(2);
    await sleep(QUIET_MS);
    expect(third.messages).toEqual(missed.map(pushed));
  });

  it('does not repeat a notification to a connection that reconnects at once (cursor not yet flushed)', async () => {
    const { client, token } = await subscriber();
    const first = await connect(app.baseUrl, token);
    const body = notification(client.id);
    await publish(app.baseUrl, publisherToken, body);
    await first.received(1);
    await first.close();

    const second = await connect(app.baseUrl, token);
    const barrier = notification(client.id);
    await publish(app.baseUrl, publisherToken, barrier);
    await second.received(1);
    await sleep(QUIET_MS);
    expect(second.ids()).toEqual([barrier.correlationId]);
  });

  it('pushes a notification published twice only once', async () => {
    const { client, token } = await subscriber();
    const stream = await connect(app.baseUrl, token);
    const body = notification(client.id);
    const id = await publish(app.baseUrl, publisherToken, body);
    expect(await publish(app.baseUrl, publisherToken, body)).toBe(id);
    const barrier = notification(client.id);
    await publish(app.baseUrl, publisherToken, barrier);

    await stream.received(2);
    await sleep(QUIET_MS);
    expect(stream.ids()).toEqual([body.correlationId, barrier.correlationId]);
    expect(await storedOrder(app.databaseUrl, client.id)).toEqual([body.correlationId, barrier.correlationId]);
  });

  it('does not replay a notification past its retention', async () => {
    const { client, token } = await subscriber();
    const expired = notification(client.id);
    const kept = notification(client.id);
    await publish(app.baseUrl, publisherToken, expired);
    await publish(app.baseUrl, publisherToken, kept);
    const updated = await query(app.databaseUrl, "UPDATE notifications SET expires_at = now() - interval '1 second' WHERE correlation_id = $1 RETURNING seq", [
      expired.correlationId,
    ]);
    expect(updated).toHaveLength(1);

    const stream = await connect(app.baseUrl, token);
    await stream.received(1);
    await sleep(QUIET_MS);
    expect(stream.ids()).toEqual([kept.correlationId]);
  });

  it('heals a missed wake-up: a row stored without NOTIFY arrives with the next publish, in seq order', async () => {
    const { client, token } = await subscriber();
    const stream = await connect(app.baseUrl, token);
    const first = notification(client.id);
    await publish(app.baseUrl, publisherToken, first);
    await stream.received(1);

    // Stored like a publish whose NOTIFY never arrived (lost while the listener was down, say).
    const silent = { ...pushed(first), correlationId: randomUUID() };
    await query(
      app.databaseUrl,
      `INSERT INTO notifications (recipient, correlation_id, status, payload, published_by, expires_at)
       SELECT recipient, $2, status, $3, published_by, expires_at FROM notifications WHERE correlation_id = $1`,
      [first.correlationId, silent.correlationId, JSON.stringify(silent)],
    );
    const next = notification(client.id);
    await publish(app.baseUrl, publisherToken, next);

    await stream.received(3);
    await sleep(QUIET_MS);
    expect(stream.ids()).toEqual([first.correlationId, silent.correlationId, next.correlationId]);
    expect(stream.ids()).toEqual(await storedOrder(app.databaseUrl, client.id));
    expect(stream.messages[1]).toEqual(silent);
  });

  describe('with a second instance on the same database', () => {
    let other: TestApp;
    let otherPublisherToken: string;
    beforeAll(async () => {
      other = await startTestApp({}, app.databaseUrl);
      otherPublisherToken = await tokenFor(other.baseUrl, publisher, PUBLISH_SCOPE);
    });
    afterAll(async () => {
      await closeAllStreams();
      await other?.close();
    });

    it('delivers a notification published on one instance to a connection on the other within a second', async () => {
      const { client, token } = await subscriber(other);
      const stream = await connect(other.baseUrl, token);
      // The first one also proves the connection is subscribed before timing the second.
      const warmUp = notification(client.id);
      await publish(app.baseUrl, publisherToken, warmUp);
      await stream.received(1);

      const body = notification(client.id);
      const started = Date.now();
      await publish(app.baseUrl, publisherToken, body);
      await stream.received(2, 1000);
      expect(Date.now() - started).toBeLessThan(1000);
      expect(stream.messages).toEqual([pushed(warmUp), pushed(body)]);
    });

    it("reaches the client's connections on both instances, whichever instance took the publish", async () => {
      const { client } = await subscriber();
      const onA = await connect(app.baseUrl, await tokenFor(app.baseUrl, client));
      const onB = await connect(other.baseUrl, await tokenFor(other.baseUrl, client));
      const outsider = await subscriber(other);
      const outsiderStream = await connect(other.baseUrl, outsider.token);

      const viaA = notification(client.id);
      await publish(app.baseUrl, publisherToken, viaA);
      const viaB = notification(client.id);
      await sleep(50);
      await publish(other.baseUrl, otherPublisherToken, viaB);

      await onA.received(2);
      await onB.received(2);
      const barrier = notification(outsider.client.id);
      await publish(app.baseUrl, publisherToken, barrier);
      await outsiderStream.received(1);
      await sleep(QUIET_MS);
      expect(onA.ids()).toEqual([viaA.correlationId, viaB.correlationId]);
      expect(onB.ids()).toEqual([viaA.correlationId, viaB.correlationId]);
      expect(outsiderStream.ids()).toEqual([barrier.correlationId]);
    });
  });

  describe('across a restart of the service process', () => {
    const services: ServiceProcess[] = [];
    afterAll(async () => {
      await closeAllStreams();
      for (const service of services) if (service.child.exitCode === null) service.child.kill('SIGKILL');
    });

    const start = async () => {
      const started = await startServiceOn(app.databaseUrl);
      services.push(started.service);
      return started;
    };

    it('loses nothing published while no client was connected, and repeats nothing after a restart', async () => {
      const first = await start();
      const { client } = await subscriber();
      let publisherOn = await tokenFor(first.baseUrl, publisher, PUBLISH_SCOPE);

      const seen = await connect(first.baseUrl, await tokenFor(first.baseUrl, client));
      const delivered = [notification(client.id), notification(client.id)];
      for (const body of delivered) await publish(first.baseUrl, publisherOn, body);
      await seen.received(2);
      await seen.close();
      // 202ed while the client has no connection; SIGTERM follows at once.
      const offline = Array.from({ length: 5 }, () => notification(client.id));
      for (const body of offline) await publish(first.baseUrl, publisherOn, body);
      first.service.child.kill('SIGTERM');
      expect(await first.service.exited).toBe(0);

      const second = await start();
      const stream = await connect(second.baseUrl, await tokenFor(second.baseUrl, client));
      await stream.received(5);
      // Still connected when SIGTERM comes, right after a live delivery: the shutdown keeps the cursor.
      publisherOn = await tokenFor(second.baseUrl, publisher, PUBLISH_SCOPE);
      const live = notification(client.id);
      await publish(second.baseUrl, publisherOn, live);
      await stream.received(6);
      second.service.child.kill('SIGTERM');
      expect((await stream.closed).code).toBe(1001);
      expect(await second.service.exited).toBe(0);
      expect(stream.messages).toEqual([...offline, live].map(pushed));

      const third = await start();
      const again = await connect(third.baseUrl, await tokenFor(third.baseUrl, client));
      const barrier = notification(client.id);
      await publish(third.baseUrl, await tokenFor(third.baseUrl, publisher, PUBLISH_SCOPE), barrier);
      await again.received(1);
      await sleep(QUIET_MS);
      expect(again.ids()).toEqual([barrier.correlationId]);
      third.service.child.kill('SIGTERM');
      expect(await third.service.exited).toBe(0);
      // Three service processes start and stop: on a busy machine each start takes seconds.
    }, 90_000);
  });
});

describe('notification delivery while PostgreSQL stops and comes back', () => {
  let dataDir: string;
  let port: number;
  let server: EmbeddedPostgres;
  let app: TestApp;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'voyage-connect-delivery-'));
    port = await freePort();
    server = await startEmbeddedPostgres({ dataDir, port });
    await ensureDatabase(server.url(), 'app');
    app = await startTestApp({ HEALTH_DB_TIMEOUT_MS: '1000' }, server.url('app'));
  });
  afterAll(async () => {
    await closeAllStreams();
    await app?.close();
    await server?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('delivers every 202ed notification exactly once, catches up on reconnecting to PostgreSQL, and delivers new ones', async () => {
    const publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    const client = await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
    const publisherToken = await tokenFor(app.baseUrl, publisher, PUBLISH_SCOPE);
    const subscriberToken = await tokenFor(app.baseUrl, client);

    const connections = [await connect(app.baseUrl, subscriberToken)];
    const received = () => connections.flatMap((stream) => stream.ids());
    const until = async (count: number, timeoutMs: number) => {
      const deadline = Date.now() + timeoutMs;
      while (received().length < count && Date.now() < deadline) await sleep(20);
    };
    const before = [notification(client.id), notification(client.id)];
    for (const body of before) await publish(app.baseUrl, publisherToken, body);
    await connections[0].received(2);
    // Accepted just before the stop: delivered before or after it, but delivered.
    const lastMinute = notification(client.id);
    await publish(app.baseUrl, publisherToken, lastMinute);
    // Committed with its wake-up lost in the stop (stored without NOTIFY): only the catch-up after
    // the listener reconnects can deliver it, since nothing is published for this client meanwhile.
    const silent = notification(client.id);
    await query(
      server.url('app'),
      `INSERT INTO notifications (recipient, correlation_id, status, payload, published_by, expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + interval '1 hour')`,
      [client.id, silent.correlationId, silent.status, JSON.stringify(pushed(silent)), publisher.id],
    );

    await server.stop();
    const down = await health(app.baseUrl);
    expect(down.status).toBe(503);
    expect(down.body.info).toContain('notification-listener');

    server = await startEmbeddedPostgres({ dataDir, port });
    await expect.poll(async () => (await health(app.baseUrl)).status, { timeout: 10_000, interval: 200 }).toBe(200);
    if (connections[0].socket.readyState !== WebSocket.OPEN) connections.push(await connect(app.baseUrl, subscriberToken));
    await until(4, 3000);
    expect(received()).toEqual([...before, lastMinute, silent].map((body) => body.correlationId));

    const after = notification(client.id);
    await publish(app.baseUrl, publisherToken, after);
    await until(5, 3000);
    await sleep(QUIET_MS);
    expect(received()).toEqual([...before, lastMinute, silent, after].map((body) => body.correlationId));
    // The stream itself survives a database restart.
    expect(connections).toHaveLength(1);
    expect(connections[0].messages[3]).toEqual(pushed(silent));
  }, 25_000);
});
