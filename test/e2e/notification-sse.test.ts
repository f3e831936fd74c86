import { request as httpRequest } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clientToken, PUBLISH_SCOPE, pushedMessage } from '../factories/notification.factory.js';
import { createClient, type TestClient } from '../factories/oauth.factory.js';
import { closeStreamClients, eventually, openSse, openV2, publishTo, SSE_PATH, subscriberClient } from '../factories/stream-clients.js';
import { startTestApp, type TestApp } from '../setup/test-app.js';

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
