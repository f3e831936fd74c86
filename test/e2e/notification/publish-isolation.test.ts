import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clientToken, publish, PUBLISH_SCOPE, SUBSCRIBE_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { createClient } from '../../factories/oauth.factory.js';
import { openStream, type Stream } from '../../factories/stream.factory.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/**
 * Publishes under locks held by the test's own PostgreSQL session: a shared transaction that
 * runs into a lock timeout fails only the recipient at fault; the publish queue is bounded; a
 * publish whose request was already answered by its deadline is never stored.
 */

/** The service's per-recipient publish lock: pg_advisory_xact_lock(7042002, hashtext(recipient)). */
const PUBLISH_LOCK_CLASS = 7_042_002;
const BATCH_PATH = '/voyage/notification/v1/notifications/batch';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A PostgreSQL session of the test's own, to hold locks the service runs into. */
async function lockHolder(databaseUrl: string) {
  const session = new pg.Client({ connectionString: databaseUrl, application_name: 'test-lock-holder' });
  await session.connect();
  await session.query("SET lock_timeout = '10s'");
  return {
    session,
    holdPublishLock: (recipient: string) => session.query('SELECT pg_advisory_lock($1, hashtext($2))', [PUBLISH_LOCK_CLASS, recipient]),
    releasePublishLocks: () => session.query('SELECT pg_advisory_unlock_all()'),
    /** Waits until `count` of the service's statements wait for a lock (bounded). */
    async waiters(count: number) {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const [{ n }] = (await session.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted')).rows;
        if (n >= count) return;
        if (Date.now() > deadline) throw new Error(`expected ${count} lock waits within 10 s, saw ${n}`);
        await sleep(10);
      }
    },
  };
}

async function postBatch(baseUrl: string, token: string, bodies: unknown[]) {
  const response = await fetch(`${baseUrl}${BATCH_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(bodies) });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: JSON.parse(text) as Record<string, unknown>, text };
}

type Answer = Awaited<ReturnType<typeof publish>>;

/** 503 with Retry-After in the route's format `{message, correlationId}`. */
function expectUnavailable(answer: Pick<Answer, 'status' | 'headers' | 'body' | 'text'>) {
  expect({ status: answer.status, body: answer.body }, answer.text).toStrictEqual({
    status: 503,
    body: { message: expect.any(String), correlationId: answer.headers.get('x-request-id') },
  });
  expect(answer.headers.get('retry-after')).toBe('1');
}

const storedIds = async (app: TestApp, correlationIds: string[]) =>
  (await query<{ correlation_id: string }>(app.databaseUrl, 'SELECT correlation_id FROM notifications WHERE correlation_id = ANY($1::uuid[]) ORDER BY seq', [correlationIds])).map(
    (row) => row.correlation_id,
  );

describe('a lock timeout in a shared publish transaction', () => {
  let app: TestApp;
  let token: string;
  let holder: Awaited<ReturnType<typeof lockHolder>>;
  const recipient = async () => (await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] })).id;

  beforeAll(async () => {
    app = await startTestApp({ DATABASE_LOCK_TIMEOUT_MS: '500' });
    token = await clientToken(app, await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] }), PUBLISH_SCOPE);
    holder = await lockHolder(app.databaseUrl);
  });
  afterAll(async () => {
    await holder?.session.end();
    await app?.close();
  });

  it("fails only the publishes of the recipient at fault: the others in the same transaction are stored and answered 202", async () => {
    const [alice, bob, carol] = [await recipient(), await recipient(), await recipient()];
    const fillers = [await recipient(), await recipient(), await recipient(), await recipient()];
    const bobsFirst = validNotification(bob);
    const stored = await publish(app, token, bobsFirst);
    expect(stored.status).toBe(202);

    // Bob's stored row is locked, so a repeat of it waits for the row (an upsert locks the row it conflicts with).
    await holder.session.query('BEGIN');
    await holder.session.query('SELECT 1 FROM notifications WHERE id = $1 FOR UPDATE', [stored.body.id]);
    try {
      // Four publishes whose recipients' locks are held fill every transaction slot, so the three after them queue and share the next transaction.
      for (const filler of fillers) await holder.holdPublishLock(filler);
      const waiting = fillers.map((filler) => publish(app, token, validNotification(filler)));
      await holder.waiters(fillers.length);
      const [forAlice, forCarol] = [validNotification(alice), validNotification(carol)];
      const answers = await Promise.all([publish(app, token, forAlice), publish(app, token, bobsFirst), publish(app, token, forCarol)]);
      for (const answer of await Promise.all(waiting)) expectUnavailable(answer);

      const [aliceAnswer, bobAnswer, carolAnswer] = answers;
      expect({ status: aliceAnswer.status, body: aliceAnswer.body }, aliceAnswer.text).toStrictEqual({ status: 202, body: { id: expect.stringMatching(UUID) } });
      expect({ status: carolAnswer.status, body: carolAnswer.body }, carolAnswer.text).toStrictEqual({ status: 202, body: { id: expect.stringMatching(UUID) } });
      expectUnavailable(bobAnswer);
      expect(await storedIds(app, [forAlice.correlationId, forCarol.correlationId])).toEqual([forAlice.correlationId, forCarol.correlationId]);
    } finally {
      await holder.session.query('ROLLBACK');
      await holder.releasePublishLocks();
    }
    // Bob's retry, once his row is free, is answered the stored id.
    const retry = await publish(app, token, bobsFirst);
    expect({ status: retry.status, body: retry.body }).toStrictEqual({ status: 202, body: { id: stored.body.id, duplicate: true } });
  });
});

describe('the publish queue', () => {
  /** Four publishes may wait; the deadline is the default (10 s), far beyond this test's waits. */
  const QUEUE_MAX = 4;
  let app: TestApp;
  let token: string;
  let holder: Awaited<ReturnType<typeof lockHolder>>;
  const recipient = async () => (await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] })).id;

  beforeAll(async () => {
    app = await startTestApp({ PUBLISH_QUEUE_MAX: String(QUEUE_MAX), DATABASE_LOCK_TIMEOUT_MS: '8000' });
    token = await clientToken(app, await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] }), PUBLISH_SCOPE);
    holder = await lockHolder(app.databaseUrl);
  });
  afterAll(async () => {
    await holder?.session.end();
    await app?.close();
  });

  it('refuses a publish or a batch with 503 and Retry-After at once while PUBLISH_QUEUE_MAX publishes wait, storing nothing of it', async () => {
    const [stuck, other] = [await recipient(), await recipient()];
    await holder.holdPublishLock(stuck);
    const queued = Array.from({ length: QUEUE_MAX }, () => validNotification(stuck));
    const refused = [validNotification(other), validNotification(other)];
    try {
      // One publish waits for the held lock; the batch's elements wait behind it (one recipient's publishes take turns), filling the queue.
      const waiting = publish(app, token, validNotification(stuck));
      await holder.waiters(1);
      const batch = postBatch(app.baseUrl, token, queued);
      await sleep(300);
      // Another recipient, free to go, is refused all the same: the queue is full.
      const single = await Promise.race([publish(app, token, refused[0]), sleep(3_000).then(() => 'still queued' as const)]);
      expect(single, 'a publish that found the queue full was answered at once').not.toBe('still queued');
      expectUnavailable(single as Answer);
      expectUnavailable(await postBatch(app.baseUrl, token, [refused[1]]));
      await holder.releasePublishLocks();
      // What was queued is stored once the lock is free.
      expect((await waiting).status).toBe(202);
      const batchAnswer = await batch;
      expect(batchAnswer.status, batchAnswer.text).toBe(202);
    } finally {
      await holder.releasePublishLocks();
    }
    expect(await storedIds(app, queued.map((body) => body.correlationId))).toHaveLength(QUEUE_MAX);
    expect(await storedIds(app, refused.map((body) => body.correlationId))).toEqual([]);
    // Once the queue drains, the same publish is taken.
    expect((await publish(app, token, refused[0])).status).toBe(202);
  });
});

describe('a publish whose request the deadline answered', () => {
  let app: TestApp;
  let token: string;
  let holder: Awaited<ReturnType<typeof lockHolder>>;
  const streams: Stream[] = [];

  beforeAll(async () => {
    // The deadline answers long before the lock wait would give up.
    app = await startTestApp({ REQUEST_TIMEOUT_MS: '1000', DATABASE_LOCK_TIMEOUT_MS: '8000' });
    token = await clientToken(app, await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] }), PUBLISH_SCOPE);
    holder = await lockHolder(app.databaseUrl);
  });
  afterEach(async () => {
    await Promise.all(streams.splice(0).map((stream) => stream.close()));
  });
  afterAll(async () => {
    await holder?.session.end();
    await app?.close();
  });

  it('is never stored nor pushed, whether it was queued or waiting for its lock when the 503 went out', async () => {
    const client = await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
    const stream = await openStream(app.baseUrl, await clientToken(app, client));
    streams.push(stream);
    const [waiting, queued, inBatch] = [validNotification(client.id), validNotification(client.id), validNotification(client.id)];
    await holder.holdPublishLock(client.id);
    try {
      const first = publish(app, token, waiting);
      await holder.waiters(1);
      const answers = await Promise.all([first, publish(app, token, queued), postBatch(app.baseUrl, token, [inBatch])]);
      for (const answer of answers) expectUnavailable(answer);
    } finally {
      await holder.releasePublishLocks();
    }
    // A later publish queues behind whatever of this recipient was still under way: once it is answered, that is done.
    const later = validNotification(client.id);
    const answer = await publish(app, token, later);
    expect({ status: answer.status, body: answer.body }, answer.text).toStrictEqual({ status: 202, body: { id: expect.stringMatching(UUID) } });
    await stream.received(1);
    await sleep(500);
    expect(stream.ids()).toEqual([later.correlationId]);
    expect(await storedIds(app, [waiting, queued, inBatch, later].map((body) => body.correlationId))).toEqual([later.correlationId]);
    // One warning per request, the deadline's 503: the dropped publishes add none.
    const warnings = app.logs.filter((line) => ['warn', 'error', 'fatal'].includes(String(line.level)) && line.reqId !== undefined);
    expect(warnings.map((line) => line.msg)).toEqual([expect.stringMatching(/^503 POST/), expect.stringMatching(/^503 POST/), expect.stringMatching(/^503 POST/)]);
  });
});
