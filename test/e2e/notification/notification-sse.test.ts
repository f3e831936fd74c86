import { type IncomingMessage, request as httpRequest } from 'node:http';
import { gunzipSync } from 'node:zlib';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClientsRepository } from '../../../src/clients/clients.repository.js';
import { clientToken, PUBLISH_SCOPE, pushedMessage, validNotification } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { closeStreamClients, eventually, openSse, openV2, publishTo, SSE_PATH, subscriberClient } from '../../factories/stream-clients.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// The notification stream as server-sent events, with the `eventsource` package (a WHATWG
// EventSource) and raw HTTP where the bytes matter: the answers before the stream, the events,
// resuming with Last-Event-ID, gzip, the heartbeat, and how the stream ends.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));



/** A raw GET of the event stream: status, headers, and the bytes received until `stop` resolves (or the stream ends). */
function rawStream(baseUrl: string, headers: Record<string, string>, stop: Promise<unknown>): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer; ended: boolean }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${baseUrl}${SSE_PATH}`, { headers }, (response) => {
      const chunks: Buffer[] = [];
      let ended = false;
      const finish = () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks), ended });
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        ended = true;
        finish();
      });
      void stop.then(() => {
        finish();
        request.destroy();
      });
    });
    request.on('error', reject);
    request.end();
  });
}

/** A value of the app's /metrics (`name` with its labels, if any). */
async function metric(app: TestApp, name: string): Promise<number | undefined> {
  const line = (await (await fetch(`${app.baseUrl}/metrics`)).text()).split('\n').find((row) => row.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

/** Waits until some statement of the service waits for a lock (up to 5 s). */
async function untilSomeoneWaitsForALock(app: TestApp): Promise<void> {
  await eventually(async () => {
    const [{ waiting }] = await query<{ waiting: number }>(app.databaseUrl, `SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    return waiting > 0;
  }, 5_000, 'a statement waiting for the lock');
}

const withinMs = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`nothing within ${ms} ms`)), ms))]);

/** The HTTP server's open connections. */
const serverConnections = (app: TestApp) => new Promise<number>((resolve, reject) => app.app.getHttpServer().getConnections((error, count) => (error ? reject(error) : resolve(count))));

afterEach(() => closeStreamClients());

describe('server-sent events', () => {
  let app: TestApp;
  let publisher: string;
  let client: TestClient;
  let token: string;

  beforeAll(async () => {
    app = await startTestApp({ WS_HEARTBEAT_INTERVAL: '1', WS_MAX_CONNECTIONS_PER_CLIENT: '2' });
    publisher = await clientToken(app, await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] }), PUBLISH_SCOPE);
  });
  afterAll(() => app?.close());

  async function freshSubscriber() {
    client = await subscriberClient(app);
    token = await clientToken(app, client);
  }

  it('streams each notification as id: SEQ, event: notification, data: the notification’s fields, with headers no proxy buffers or caches', async () => {
    await freshSubscriber();
    const body = await publishTo(app, publisher, client.id);
    const answer = await rawStream(app.baseUrl, { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' }, sleep(3_000));
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(answer.headers['cache-control']).toBe('no-cache, no-transform');
    expect(answer.headers['x-accel-buffering']).toBe('no');
    const text = answer.body.toString();
    const event = /id: (\d+)\nevent: notification\ndata: (.*)\n\n/.exec(text)!;
    expect(JSON.parse(event[2])).toEqual(pushedMessage(body));
    // The heartbeat: a comment line every WS_HEARTBEAT_INTERVAL (1 s here), from the tick after the stream's first.
    expect(text).toMatch(/^: keepalive$/m);
  });

  it('delivers live notifications to an EventSource, in order', async () => {
    await freshSubscriber();
    const source = await openSse(app.baseUrl, token);
    const bodies = [await publishTo(app, publisher, client.id), await publishTo(app, publisher, client.id), await publishTo(app, publisher, client.id)];
    await eventually(() => source.notifications().length === 3, 5_000, 'the notifications');
    expect(source.notifications()).toEqual(bodies.map(pushedMessage));
    const ids = source.events.map((event) => Number(event.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  it('resumes after Last-Event-ID, which confirms everything up to it; without it, sends again everything unconfirmed', async () => {
    await freshSubscriber();
    const bodies = [await publishTo(app, publisher, client.id), await publishTo(app, publisher, client.id)];
    const first = await openSse(app.baseUrl, token);
    await eventually(() => first.notifications().length === 2, 5_000, 'the replay');
    const lastId = first.events.at(-1)!.id;
    first.close();
    await sleep(300);
    // Nothing was confirmed: a stream without a position gets both again.
    const again = await openSse(app.baseUrl, token);
    await eventually(() => again.notifications().length === 2, 5_000, 'both again');
    again.close();
    const third = await publishTo(app, publisher, client.id);
    const resumed = await openSse(app.baseUrl, token, { lastEventId: lastId });
    await eventually(() => resumed.notifications().length === 1, 5_000, 'what follows');
    await sleep(300);
    expect(resumed.notifications()).toEqual([pushedMessage(third)]);
    expect(bodies).toHaveLength(2);
    resumed.close();
    await sleep(400); // the cursor is saved every 250 ms
    // The resume confirmed the first two for every transport.
    const v2 = await openV2(app.baseUrl, token);
    await eventually(() => v2.notifications().length === 1, 5_000, 'the third');
    expect(v2.notifications()[0].data).toEqual(pushedMessage(third));
  });

  it('compresses with gzip when accepted, flushing every burst at once', async () => {
    await freshSubscriber();
    const body = await publishTo(app, publisher, client.id);
    const answer = await rawStream(app.baseUrl, { Authorization: `Bearer ${token}`, 'Accept-Encoding': 'gzip' }, sleep(800));
    expect(answer.headers['content-encoding']).toBe('gzip');
    const text = gunzipSync(answer.body, { finishFlush: 2 /* Z_SYNC_FLUSH: the stream has not ended */ }).toString();
    expect(JSON.parse(/event: notification\ndata: (.*)\n/.exec(text)![1])).toEqual(pushedMessage(body));
    // An EventSource (fetch decompresses) gets it too.
    const source = await openSse(app.baseUrl, token, { gzip: true });
    await eventually(() => source.notifications().length === 1, 5_000, 'the notification through gzip');
  });

  it('answers before the stream: 401 without a token, 403 without the subscribe scope, 406, 400 for a position it never sends', async () => {
    await freshSubscriber();
    const get = (headers: Record<string, string>, query = '') => fetch(`${app.baseUrl}${SSE_PATH}${query}`, { headers });
    const unauthenticated = await get({});
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('www-authenticate')).toBe('Bearer realm="voyage-connect"');
    const publisherOnly = await get({ Authorization: `Bearer ${publisher}` });
    expect(publisherOnly.status).toBe(403);
    expect(publisherOnly.headers.get('www-authenticate')).toMatch(/error="insufficient_scope"/);
    expect((await get({ Authorization: `Bearer ${token}`, Accept: 'application/json' })).status).toBe(406);
    for (const [headers, query] of [[{ 'Last-Event-ID': 'abc' }, ''], [{ 'Last-Event-ID': '-1' }, ''], [{}, '?after=1e3'], [{}, '?epoch=a%20b'], [{}, '?after=1&after=2']] as const) {
      const refused = await get({ Authorization: `Bearer ${token}`, ...headers }, query);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ message: 'Validation failed', errors: [expect.any(String)] });
    }
  });

  it('gives back the slot of a stream request dropped while its token was being checked: the client’s next streams are let in', async () => {
    await freshSubscriber();
    // The bearer check reads the client from PostgreSQL (its cached copy dropped), where the test holds the table.
    app.get(ClientsRepository).forget(client.id);
    const lock = new pg.Client({ connectionString: app.databaseUrl, application_name: 'test-lock-holder' });
    await lock.connect();
    try {
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE clients IN ACCESS EXCLUSIVE MODE');
      const streamsBefore = (await metric(app, 'ws_connections_total')) ?? 0;
      const connectionsBefore = await serverConnections(app);
      const request = httpRequest(`${app.baseUrl}${SSE_PATH}`, { agent: false, headers: { Authorization: `Bearer ${token}` } });
      request.on('error', () => {});
      request.end();
      await untilSomeoneWaitsForALock(app);
      // The client gives up while the check waits, and the server has seen its connection end.
      request.destroy();
      await eventually(async () => (await serverConnections(app)) <= connectionsBefore, 5_000, 'the server to see the client leave');
      await lock.query('ROLLBACK');
      // The check then passes and the stream is let in, for a client that is gone: it must not stay counted.
      await eventually(async () => (await metric(app, 'ws_connections_total')) === streamsBefore + 1, 5_000, 'the dropped request’s stream');
      await eventually(async () => (await metric(app, 'ws_connections_open')) === 0, 5_000, 'no stream open');
    } finally {
      await lock.end();
    }
    // The client's whole share (WS_MAX_CONNECTIONS_PER_CLIENT=2) is its own again.
    const [first, second] = [await openSse(app.baseUrl, token), await openSse(app.baseUrl, token)];
    expect([first.opens, second.opens]).toEqual([1, 1]);
  });

  it('counts in the same capacity as WebSocket streams: 503 with Retry-After past the client’s share', async () => {
    await freshSubscriber();
    const [ws, sse] = [await openV2(app.baseUrl, token), await openSse(app.baseUrl, token)];
    const third = await fetch(`${app.baseUrl}${SSE_PATH}`, { headers: { Authorization: `Bearer ${token}` } });
    expect(third.status).toBe(503);
    expect(third.headers.get('retry-after')).toBe('1');
    expect(await third.json()).toMatchObject({ message: 'too many connections for this client: reconnect later' });
    expect(ws.closeInfo).toBeUndefined();
    expect(sse.opens).toBe(1);
  });
});

describe('server-sent events: how a stream ends', () => {
  it('says token-expired at the token’s expiry, then ends', async () => {
    const app = await startTestApp({ CLIENT_TOKEN_TTL: '5' });
    try {
      const client = await subscriberClient(app);
      const started = Date.now();
      const answer = await rawStream(app.baseUrl, { Authorization: `Bearer ${await clientToken(app, client)}` }, sleep(9_000));
      expect(answer.ended).toBe(true);
      expect(answer.body.toString()).toMatch(/event: token-expired\ndata: \{"reason":"token expired"\}\n\n$/);
      expect(Date.now() - started).toBeLessThan(8_000);
    } finally {
      await app.close();
    }
  });

  it('destroys a stream closed as slow after WS_CLOSE_TIMEOUT_MS though its reader keeps the connection open without reading, and gives back its slot', async () => {
    const app = await startTestApp({ WS_MAX_BUFFERED_BYTES: '1024', WS_CLOSE_TIMEOUT_MS: '500' });
    try {
      const client = await subscriberClient(app);
      const token = await clientToken(app, client);
      const publisher = await clientToken(app, await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] }), PUBLISH_SCOPE);
      // A reader that takes the headers, then nothing: the kernel's buffers fill, then the server's.
      const response = await new Promise<IncomingMessage>((resolve, reject) => {
        const request = httpRequest(`${app.baseUrl}${SSE_PATH}`, { agent: false, headers: { Authorization: `Bearer ${token}` } }, resolve);
        request.on('error', reject);
        request.end();
      });
      response.socket.pause();
      const ended = new Promise<{ complete: boolean }>((resolve) => response.once('close', () => resolve({ complete: response.complete })));
      response.on('error', () => {});
      await eventually(async () => (await metric(app, 'ws_connections_open')) === 1, 5_000, 'the stream');
      // More than the kernel's socket buffers hold (a few MB) plus WS_MAX_BUFFERED_BYTES: the stream gets 5 s to drain, then is closed as slow.
      const bulky = Array.from({ length: 30 }, (_, index) => `${index}`.padEnd(1_990, '.'));
      for (let batch = 0; batch < 2; batch++) {
        const published = await fetch(`${app.baseUrl}/voyage/notification/v1/notifications/batch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${publisher}` },
          body: JSON.stringify(Array.from({ length: 60 }, () => validNotification(client.id, { warnings: bulky }))),
        });
        expect(published.status).toBe(202);
      }
      // Closed, and cut WS_CLOSE_TIMEOUT_MS later, while the reader still reads nothing.
      await eventually(async () => (await metric(app, 'ws_connections_open')) === 0, 12_000, 'the slot given back');
      // What the server still held was dropped with its socket: the reader never gets the response's end.
      response.socket.resume();
      response.resume();
      expect(await withinMs(ended, 5_000)).toEqual({ complete: false });
    } finally {
      await app.close();
    }
  });

  it('says shutdown when the service stops, then ends', async () => {
    const app = await startTestApp({});
    const client = await subscriberClient(app);
    const answer = rawStream(app.baseUrl, { Authorization: `Bearer ${await clientToken(app, client)}` }, sleep(10_000));
    await sleep(500);
    await app.close();
    const { ended, body } = await answer;
    expect(ended).toBe(true);
    expect(body.toString()).toMatch(/event: shutdown\ndata: \{"reason":"server shutting down"\}\n\n$/);
  });
});
