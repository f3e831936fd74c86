import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clientToken, publish, PUBLISH_SCOPE, type PublishBody, pushedMessage, SUBSCRIBE_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { openStream, type Stream } from '../../factories/stream.factory.js';
import { query } from '../../setup/database.js';
import { type ServiceProcess, startServiceOn } from '../../setup/processes.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/**
 * POST /voyage/notification/v1/notifications/batch, seen by a publisher and by real stream
 * clients: one result per element in order, the single route's validation and dedupe per
 * element, per-recipient order, the element and byte limits, and durability across a crash.
 */

const BATCH_PATH = '/voyage/notification/v1/notifications/batch';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Small limits for this file's main instance, so the 413s are cheap to reach. */
const BATCH_MAX = 20;
const BATCH_MAX_BYTES = 128 * 1024;
/** How long "nothing more arrives" is watched for. */
const QUIET_MS = 500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface BatchAnswer {
  status: number;
  body: Record<string, unknown>;
  text: string;
  requestId: string | null;
}

/** Posts `body` as JSON, or `raw` as it is. */
async function postBatch(baseUrl: string, token: string | undefined, body: unknown, raw?: { text: string; contentType?: string }): Promise<BatchAnswer> {
  const response = await fetch(`${baseUrl}${BATCH_PATH}`, {
    method: 'POST',
    headers: { 'content-type': raw?.contentType ?? 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    body: raw ? raw.text : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown>, text, requestId: response.headers.get('x-request-id') };
}

/** A batch that must be answered 202; returns its results. */
async function accepted(baseUrl: string, token: string, bodies: unknown[]): Promise<Record<string, unknown>[]> {
  const answer = await postBatch(baseUrl, token, bodies);
  expect(answer.status, answer.text).toBe(202);
  expect(Object.keys(answer.body)).toEqual(['results']);
  const results = answer.body.results as Record<string, unknown>[];
  expect(results).toHaveLength(bodies.length);
  return results;
}

/** `{id}` for each body, each a fresh stored id. */
const storedAll = (results: Record<string, unknown>[]) => {
  for (const result of results) expect(result).toStrictEqual({ id: expect.stringMatching(UUID) });
  expect(new Set(results.map((result) => result.id)).size).toBe(results.length);
  return results.map((result) => result.id as string);
};

describe('batch publishing', () => {
  let app: TestApp;
  let publisher: TestClient;
  let publishToken: string;
  const streams: Stream[] = [];

  const recipient = async () => {
    const client = await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
    return { client, token: await clientToken(app, client) };
  };
  const connect = async (token: string, baseUrl = app.baseUrl) => {
    const stream = await openStream(baseUrl, token);
    streams.push(stream);
    return stream;
  };
  const rowCount = async () => Number((await query<{ n: string }>(app.databaseUrl, 'SELECT count(*) AS n FROM notifications'))[0].n);
  const storedFor = async (recipientId: string) =>
    query<{ id: string; correlation_id: string; payload: string; published_by: string | null }>(
      app.databaseUrl,
      'SELECT id, correlation_id, payload, published_by FROM notifications WHERE recipient = $1 ORDER BY seq',
      [recipientId],
    );

  beforeAll(async () => {
    app = await startTestApp({ PUBLISH_BATCH_MAX: String(BATCH_MAX), PUBLISH_BATCH_MAX_BYTES: String(BATCH_MAX_BYTES) });
    publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    publishToken = await clientToken(app, publisher, PUBLISH_SCOPE);
  });
  afterEach(async () => {
    await Promise.all(streams.splice(0).map((stream) => stream.close()));
  });
  afterAll(async () => {
    await app?.close();
  });

  it('answers one {id} per element in order, stores each as the single route would and pushes each recipient its own, in array order', async () => {
    const alice = await recipient();
    const bob = await recipient();
    const [aliceStream, bobStream] = [await connect(alice.token), await connect(bob.token)];
    const bodies = Array.from({ length: 12 }, (_, index) => validNotification(index % 3 === 0 ? bob.client.id : alice.client.id, { origin: `origin-${index}` }));
    const ids = storedAll(await accepted(app.baseUrl, publishToken, bodies));

    const forAlice = bodies.filter((body) => body.recipient === alice.client.id);
    const forBob = bodies.filter((body) => body.recipient === bob.client.id);
    await aliceStream.received(forAlice.length);
    await bobStream.received(forBob.length);
    await sleep(QUIET_MS);
    expect(aliceStream.messages).toEqual(forAlice.map(pushedMessage));
    expect(bobStream.messages).toEqual(forBob.map(pushedMessage));
    // Exactly the notification's fields in their documented order, as the single route stores them; the publisher is recorded.
    const rows = await storedFor(alice.client.id);
    expect(rows.map((row) => row.id)).toEqual(ids.filter((_, index) => bodies[index].recipient === alice.client.id));
    expect(rows.map((row) => row.payload)).toEqual(forAlice.map((body) => JSON.stringify(pushedMessage(body))));
    expect(new Set(rows.map((row) => row.published_by))).toEqual(new Set([publisher.id]));
  });

  it('keeps each recipient in publish order across batches sent one after another and concurrently', async () => {
    const alice = await recipient();
    const stream = await connect(alice.token);
    const first = Array.from({ length: 15 }, () => validNotification(alice.client.id));
    const second = Array.from({ length: 15 }, () => validNotification(alice.client.id));
    storedAll(await accepted(app.baseUrl, publishToken, first));
    storedAll(await accepted(app.baseUrl, publishToken, second));
    // Concurrent requests have no order between them, but each keeps its own.
    const concurrent = Array.from({ length: 4 }, () => Array.from({ length: 10 }, () => validNotification(alice.client.id)));
    await Promise.all(concurrent.map((bodies) => accepted(app.baseUrl, publishToken, bodies).then(storedAll)));

    const total = first.length + second.length + 40;
    await stream.received(total);
    const order = stream.ids();
    expect(order.slice(0, 30)).toEqual([...first, ...second].map((body) => body.correlationId));
    for (const bodies of concurrent) {
      const positions = bodies.map((body) => order.indexOf(body.correlationId));
      expect(positions.every((position) => position >= 30)).toBe(true);
      expect(positions).toEqual([...positions].sort((a, b) => a - b));
    }
    expect((await storedFor(alice.client.id)).map((row) => row.correlation_id)).toEqual(order);
  });

  it('answers a repeat {id, duplicate: true} with the stored id, within a batch, across batches and with the single route, and pushes it once', async () => {
    const alice = await recipient();
    const stream = await connect(alice.token);
    const [a, b, c] = [validNotification(alice.client.id), validNotification(alice.client.id), validNotification(alice.client.id)];
    const single = await publish(app, publishToken, c);
    expect(single.status).toBe(202);

    const results = await accepted(app.baseUrl, publishToken, [a, b, a, c, { ...b, warnings: ['a later copy'] }]);
    expect(results).toStrictEqual([
      { id: expect.stringMatching(UUID) },
      { id: expect.stringMatching(UUID) },
      { id: results[0].id, duplicate: true },
      { id: single.body.id, duplicate: true },
      { id: results[1].id, duplicate: true },
    ]);
    const again = await accepted(app.baseUrl, publishToken, [b]);
    expect(again).toStrictEqual([{ id: results[1].id, duplicate: true }]);
    const bySingle = await publish(app, publishToken, a);
    expect({ status: bySingle.status, body: bySingle.body }).toStrictEqual({ status: 202, body: { id: results[0].id, duplicate: true } });

    // The same correlationId with another status is another notification.
    const progressed = { ...a, status: 'Completed' };
    const [next] = storedAll(await accepted(app.baseUrl, publishToken, [progressed]));
    expect(next).not.toBe(results[0].id);

    await stream.received(4);
    await sleep(QUIET_MS);
    expect(stream.messages).toEqual([c, a, b, progressed].map(pushedMessage));
  });

  it('answers the same UUID in two letter cases in one batch as one notification, the later a duplicate, and the others in the batch as usual', async () => {
    const alice = await recipient();
    const body = validNotification(alice.client.id);
    const upper = { ...body, correlationId: body.correlationId.toUpperCase() };
    const other = validNotification(alice.client.id);
    const results = await accepted(app.baseUrl, publishToken, [upper, other, body, upper]);
    expect(results).toStrictEqual([{ id: expect.stringMatching(UUID) }, { id: expect.stringMatching(UUID) }, { id: results[0].id, duplicate: true }, { id: results[0].id, duplicate: true }]);
    expect((await storedFor(alice.client.id)).map((row) => [row.id, row.correlation_id])).toEqual([
      [results[0].id, body.correlationId],
      [results[1].id, other.correlationId],
    ]);
    // A retry of the whole batch answers the same ids.
    expect(await accepted(app.baseUrl, publishToken, [upper, other, body, upper])).toStrictEqual(results.map((result) => ({ id: result.id, duplicate: true })));
  });

  it('refuses a bad element with {status: 400, errors} as the single route words them, stores nothing for it and publishes the others', async () => {
    const alice = await recipient();
    const stream = await connect(alice.token);
    const good = Array.from({ length: 4 }, () => validNotification(alice.client.id));
    const invalid: unknown[] = [
      { ...validNotification(alice.client.id), statusTimestamp: '2026-02-30T08:00:00.000Z', productName: '' },
      validNotification('no-such-client'),
      { ...validNotification(alice.client.id), deliverables: [{ productType: '' }] },
      null,
      42,
      'notification',
      [validNotification(alice.client.id)],
      {},
    ];
    const bodies = [good[0], ...invalid.slice(0, 4), good[1], good[2], ...invalid.slice(4), good[3]];
    const before = await rowCount();
    const results = await accepted(app.baseUrl, publishToken, bodies);

    for (const [index, body] of bodies.entries()) {
      if (good.includes(body as PublishBody)) {
        expect(results[index], `element ${index}`).toStrictEqual({ id: expect.stringMatching(UUID) });
        continue;
      }
      // The same words the single route answers for the same body.
      const alone = await publish(app, publishToken, body);
      expect(alone.status, `element ${index}: ${alone.text}`).toBe(400);
      expect(results[index], `element ${index}`).toStrictEqual({ status: 400, errors: alone.body.errors });
      expect((results[index].errors as string[]).length).toBeGreaterThan(0);
    }
    expect(results[1].errors).toEqual(expect.arrayContaining([expect.stringContaining('statusTimestamp'), expect.stringContaining('productName')]));
    expect(results[2].errors).toEqual(['recipient must be the client_id of a registered client']);
    expect(results[3].errors).toEqual([expect.stringContaining('productType')]);

    expect(await rowCount()).toBe(before + good.length);
    await stream.received(good.length);
    await sleep(QUIET_MS);
    expect(stream.messages).toEqual(good.map(pushedMessage));
  });

  it('drops unknown fields of an element, as the single route does', async () => {
    const alice = await recipient();
    const body = validNotification(alice.client.id);
    const [id] = storedAll(await accepted(app.baseUrl, publishToken, [{ ...body, downloadUrl: 'https://x.example.com/', deliverables: [{ productType: 'pdf', size: 3 }] }]));
    const [row] = await storedFor(alice.client.id);
    expect(row).toMatchObject({ id, payload: JSON.stringify(pushedMessage({ ...body, deliverables: [{ productType: 'pdf' }] })) });
  });

  it('refuses a body that is not an array of 1 or more elements with 400 {message, errors, correlationId}, storing nothing', async () => {
    const alice = await recipient();
    const before = await rowCount();
    for (const body of [validNotification(alice.client.id), [], 'notifications', 42, null, {}]) {
      const answer = await postBatch(app.baseUrl, publishToken, body);
      expect({ status: answer.status, body: answer.body }, `${JSON.stringify(body)}: ${answer.text}`).toStrictEqual({
        status: 400,
        body: { message: 'Validation failed', errors: [`the body must be a JSON array of 1 to ${BATCH_MAX} notifications`], correlationId: answer.requestId },
      });
    }
    const broken = await postBatch(app.baseUrl, publishToken, undefined, { text: `[${JSON.stringify(validNotification(alice.client.id))},` });
    expect({ status: broken.status, body: broken.body }).toStrictEqual({ status: 400, body: { message: expect.any(String), correlationId: broken.requestId } });
    const deep = await postBatch(app.baseUrl, publishToken, undefined, { text: `${'['.repeat(40)}${']'.repeat(40)}` });
    expect(deep.status).toBe(400);
    const form = await postBatch(app.baseUrl, publishToken, undefined, { text: '<notifications/>', contentType: 'application/xml' });
    expect(form.status).toBe(415);
    expect(await rowCount()).toBe(before);
  });

  it('refuses more than PUBLISH_BATCH_MAX elements with 413, storing none of them', async () => {
    const alice = await recipient();
    const before = await rowCount();
    const answer = await postBatch(app.baseUrl, publishToken, Array.from({ length: BATCH_MAX + 1 }, () => validNotification(alice.client.id)));
    expect({ status: answer.status, body: answer.body }, answer.text).toStrictEqual({
      status: 413,
      body: { message: `at most ${BATCH_MAX} notifications per request: send the others in another request`, correlationId: answer.requestId },
    });
    expect(await rowCount()).toBe(before);
    // Exactly the limit is fine.
    storedAll(await accepted(app.baseUrl, publishToken, Array.from({ length: BATCH_MAX }, () => validNotification(alice.client.id))));
  });

  it('reads bodies past the 64 KiB of other routes up to PUBLISH_BATCH_MAX_BYTES, and refuses a larger one with 413, storing nothing', async () => {
    const alice = await recipient();
    // About 10 KiB an element: 10 elements pass 64 KiB and stay under 128 KiB; 14 pass 128 KiB.
    const large = () => validNotification(alice.client.id, { warnings: Array.from({ length: 5 }, () => 'w'.repeat(2000)) });
    const fits = Array.from({ length: 10 }, large);
    expect(JSON.stringify(fits).length).toBeGreaterThan(64 * 1024);
    storedAll(await accepted(app.baseUrl, publishToken, fits));

    const before = await rowCount();
    const tooLarge = Array.from({ length: 14 }, large);
    expect(JSON.stringify(tooLarge).length).toBeGreaterThan(BATCH_MAX_BYTES);
    const answer = await postBatch(app.baseUrl, publishToken, tooLarge);
    expect({ status: answer.status, body: answer.body }, answer.text).toStrictEqual({ status: 413, body: { message: expect.any(String), correlationId: answer.requestId } });
    expect(await rowCount()).toBe(before);
    // The single route keeps its own 64 KiB.
    const single = await publish(app, publishToken, validNotification(alice.client.id, { warnings: Array.from({ length: 40 }, () => 'w'.repeat(2000)) }));
    expect(single.status).toBe(413);
  });

  it('refuses a missing token with 401 and a subscribe-only token with 403, checking the token before the body, storing nothing', async () => {
    const alice = await recipient();
    const before = await rowCount();
    const bodies = [validNotification(alice.client.id)];
    const anonymous = await postBatch(app.baseUrl, undefined, bodies);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toStrictEqual({ message: expect.any(String), correlationId: anonymous.requestId });
    expect((await postBatch(app.baseUrl, 'garbage', [{}])).status).toBe(401);
    expect((await postBatch(app.baseUrl, 'garbage', 'not an array')).status).toBe(401);
    const subscribeOnly = await postBatch(app.baseUrl, alice.token, bodies);
    expect(subscribeOnly.status).toBe(403);
    expect(await rowCount()).toBe(before);
  });

  it('takes the default 1,000 elements in one request on an instance with the shipped limits, in order', async () => {
    const defaults = await startTestApp({}, app.databaseUrl);
    try {
      const alice = await recipient();
      const stream = await connect(await clientToken(defaults, alice.client), defaults.baseUrl);
      const bodies = Array.from({ length: 1000 }, () => validNotification(alice.client.id));
      const token = await clientToken(defaults, publisher, PUBLISH_SCOPE);
      storedAll(await accepted(defaults.baseUrl, token, bodies));
      await stream.received(1000, 15_000);
      expect(stream.ids()).toEqual(bodies.map((body) => body.correlationId));
      const tooMany = await postBatch(defaults.baseUrl, token, Array.from({ length: 1001 }, () => ({})));
      expect(tooMany.status).toBe(413);
    } finally {
      await Promise.all(streams.splice(0).map((stream) => stream.close()));
      await defaults.close();
    }
  }, 30_000);

  describe('durability', () => {
    const services: ServiceProcess[] = [];
    afterAll(() => {
      for (const service of services) if (service.child.exitCode === null) service.child.kill('SIGKILL');
    });

    const start = async () => {
      const started = await startServiceOn(app.databaseUrl);
      services.push(started.service);
      return started;
    };

    it('delivers every 202ed element, in order, after the service is killed (SIGKILL) right after answering', async () => {
      const alice = await recipient();
      const first = await start();
      const bodies = Array.from({ length: 200 }, (_, index) => validNotification(alice.client.id, { origin: `before-crash-${index}` }));
      storedAll(await accepted(first.baseUrl, await clientToken({ baseUrl: first.baseUrl } as TestApp, publisher, PUBLISH_SCOPE), bodies));
      first.service.child.kill('SIGKILL');
      await first.service.exited;

      const second = await start();
      const stream = await connect(await clientToken({ baseUrl: second.baseUrl } as TestApp, alice.client), second.baseUrl);
      await stream.received(bodies.length, 10_000);
      await sleep(QUIET_MS);
      expect(stream.messages).toEqual(bodies.map(pushedMessage));
      await stream.close();
      second.service.child.kill('SIGTERM');
      expect(await second.service.exited).toBe(0);
    }, 40_000);
  });
});
