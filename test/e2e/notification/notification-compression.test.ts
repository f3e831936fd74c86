import { type IncomingHttpHeaders, request as httpRequest } from 'node:http';
import { createGunzip } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { clientToken, PUBLISH_SCOPE, type PublishBody, publish, pushedMessage, SUBSCRIBE_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { eventually, SSE_PATH } from '../../factories/stream-clients.js';
import { openStream, type Stream } from '../../factories/stream.factory.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/**
 * permessage-deflate on the notification stream (WS_COMPRESSION), seen from real `ws` clients:
 * what the 101 answer negotiates, that notifications arrive intact and in order whether sent one
 * at a time or in a burst, and the bytes they take on the wire. The event stream's gzip follows
 * the same setting, seen from a raw HTTP client that counts the compressed bytes.
 */

const STREAM_PATH = '/voyage/notification/v1/ws/products';
const BATCH_PATH = '/voyage/notification/v1/notifications/batch';
/** Notifications per measurement: enough that frame headers and pings weigh little. */
const COUNT = 20;

const streams: Stream[] = [];
afterEach(async () => {
  await Promise.all(streams.splice(0).map((stream) => stream.close()));
});

async function connect(app: TestApp, client: TestClient, options: Parameters<typeof openStream>[2] = {}): Promise<Stream> {
  const stream = await openStream(app.baseUrl, await clientToken(app, client), options);
  streams.push(stream);
  return stream;
}

/** A subscriber and a publisher token on `app`. */
async function parties(app: TestApp) {
  const subscriber = await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
  const publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
  return { subscriber, publisherToken: await clientToken(app, publisher, PUBLISH_SCOPE) };
}

/** Publishes `count` notifications to `recipient`, one request each, one after another (202 each). */
async function publishOneByOne(app: TestApp, token: string, recipient: string, count: number): Promise<PublishBody[]> {
  const bodies: PublishBody[] = [];
  for (let index = 0; index < count; index++) {
    const body = validNotification(recipient);
    const answer = await publish(app, token, body);
    if (answer.status !== 202) throw new Error(`publish answered ${answer.status}: ${answer.text}`);
    bodies.push(body);
  }
  return bodies;
}

/** Publishes `count` notifications to `recipient` in one batch request, so they are pushed as one burst. */
async function publishBurst(app: TestApp, token: string, recipient: string, count: number): Promise<PublishBody[]> {
  const bodies = Array.from({ length: count }, () => validNotification(recipient));
  const response = await fetch(`${app.baseUrl}${BATCH_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(bodies),
  });
  if (response.status !== 202) throw new Error(`batch answered ${response.status}: ${await response.text()}`);
  return bodies;
}

const eventStreams: (() => void)[] = [];
afterEach(() => {
  for (const close of eventStreams.splice(0)) close();
});

/** An event stream asked for with `Accept-Encoding: gzip`, read as it arrives: the compressed bytes so far and the text they inflate to. */
async function openGzipEventStream(app: TestApp, client: TestClient) {
  const token = await clientToken(app, client);
  let compressed = 0;
  let text = '';
  const response = await new Promise<{ headers: IncomingHttpHeaders; on(event: 'data', listener: (chunk: Buffer) => void): unknown; pipe<T extends NodeJS.WritableStream>(to: T): T }>((resolve, reject) => {
    const request = httpRequest(`${app.baseUrl}${SSE_PATH}`, { agent: false, headers: { authorization: `Bearer ${token}`, 'accept-encoding': 'gzip' } }, resolve);
    request.on('error', reject);
    request.end();
    eventStreams.push(() => request.destroy());
  });
  response.on('data', (chunk: Buffer) => (compressed += chunk.length));
  const inflater = createGunzip();
  inflater.on('error', () => {});
  inflater.on('data', (chunk: Buffer) => (text += chunk.toString()));
  if (response.headers['content-encoding'] === 'gzip') response.pipe(inflater);
  else response.on('data', (chunk: Buffer) => (text += chunk.toString()));
  await eventually(() => text.includes(': stream open'), 5_000, 'the stream to open');
  return { headers: response.headers, compressedBytes: () => compressed, text: () => text };
}

/** The compressed bytes each of two notifications, alike but for their correlation ids, costs on `stream` when published one after the other. */
async function costOfTwoAlike(app: TestApp, publisherToken: string, recipient: string, stream: Awaited<ReturnType<typeof openGzipEventStream>>): Promise<[number, number]> {
  const costs: number[] = [];
  for (let index = 0; index < 2; index++) {
    const before = stream.compressedBytes();
    const body = validNotification(recipient);
    expect((await publish(app, publisherToken, body)).status).toBe(202);
    await eventually(() => stream.text().includes(body.correlationId), 5_000, 'the notification');
    costs.push(stream.compressedBytes() - before);
  }
  return costs as [number, number];
}

/** The stream got exactly `bodies`, as pushed, in order; returns the bytes of their text. */
async function expectReceived(stream: Stream, bodies: PublishBody[]): Promise<number> {
  await stream.received(bodies.length);
  expect(stream.messages).toEqual(bodies.map(pushedMessage));
  return stream.raw.reduce((sum, text) => sum + Buffer.byteLength(text), 0);
}

describe('WS_COMPRESSION=on (the default)', () => {
  let app: TestApp;
  let subscriber: TestClient;
  let publisherToken: string;

  beforeAll(async () => {
    app = await startTestApp();
    ({ subscriber, publisherToken } = await parties(app));
  });
  afterAll(() => app?.close());

  it('negotiates permessage-deflate without context takeover with a client that offers it, and pushes intact notifications in fewer bytes', async () => {
    const stream = await connect(app, subscriber);
    expect(stream.socket.extensions).toBe('permessage-deflate');
    expect(stream.upgradeHeaders['sec-websocket-extensions']).toBe('permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10');

    // One at a time: each is compressed on its own, after the previous one's zlib state was freed.
    const text = await expectReceived(stream, await publishOneByOne(app, publisherToken, subscriber.id, COUNT));
    // About 69 % for the seed's shape; the frames' headers and the delivery pings come on top.
    expect(stream.bytesRead()).toBeLessThan(0.8 * text);
  });

  it('pushes a burst intact and in order, compressed', async () => {
    const stream = await connect(app, subscriber);
    const text = await expectReceived(stream, await publishBurst(app, publisherToken, subscriber.id, 5 * COUNT));
    expect(stream.bytesRead()).toBeLessThan(0.8 * text);
  });

  it('negotiates nothing with a client that does not offer it, and pushes the same notifications uncompressed', async () => {
    const stream = await connect(app, subscriber, { perMessageDeflate: false });
    expect(stream.socket.extensions).toBe('');
    expect(stream.upgradeHeaders['sec-websocket-extensions']).toBeUndefined();
    const text = await expectReceived(stream, await publishOneByOne(app, publisherToken, subscriber.id, COUNT));
    expect(stream.bytesRead()).toBeGreaterThanOrEqual(text);
  });

  it('reads compressed client messages, and closes with 1009 one that inflates past WS_MAX_INCOMING_BYTES', async () => {
    const stream = await connect(app, subscriber, { perMessageDeflate: { threshold: 0 } });
    // The stream ignores what clients say (v1); a compressed message must not break it.
    for (let index = 0; index < 3; index++) stream.socket.send(JSON.stringify({ hello: index, padding: 'x'.repeat(200) }));
    await expectReceived(stream, await publishOneByOne(app, publisherToken, subscriber.id, 2));
    // 100 kB of one letter is about a hundred bytes on the wire.
    stream.socket.send('a'.repeat(100_000));
    expect(await stream.closed).toMatchObject({ code: 1009 });
  });

  it('compresses each event of an event stream on its own: a notification like the one before it costs as many bytes', async () => {
    // A subscriber of its own: what an event stream is sent stays unconfirmed, and would come again to the others' streams.
    const { subscriber: reader } = await parties(app);
    const stream = await openGzipEventStream(app, reader);
    expect(stream.headers['content-encoding']).toBe('gzip');
    const [first, second] = await costOfTwoAlike(app, publisherToken, reader.id, stream);
    // Nothing of the first shortens the second (context takeover makes it a fraction: below).
    expect(second).toBeGreaterThan(0.85 * first);
  });

  it('refuses with 400 a client that asks for a window smaller than 1 KiB (server_max_window_bits=9)', async () => {
    const socket = new WebSocket(`${app.baseUrl.replace(/^http/, 'ws')}${STREAM_PATH}`, {
      headers: { authorization: `Bearer ${await clientToken(app, subscriber)}` },
      perMessageDeflate: { serverMaxWindowBits: 9 },
    });
    socket.on('error', () => {});
    const status = await new Promise<number | undefined>((resolve) => {
      socket.once('unexpected-response', (_request, response) => resolve(response.statusCode));
      socket.once('open', () => resolve(101));
    });
    socket.terminate();
    expect(status).toBe(400);
  });
});

describe('WS_COMPRESSION=context-takeover', () => {
  let app: TestApp;
  let subscriber: TestClient;
  let publisherToken: string;

  beforeAll(async () => {
    app = await startTestApp({ WS_COMPRESSION: 'context-takeover' });
    ({ subscriber, publisherToken } = await parties(app));
  });
  afterAll(() => app?.close());

  it('keeps the server context from message to message: intact notifications, a fraction of their bytes', async () => {
    const stream = await connect(app, subscriber);
    expect(stream.upgradeHeaders['sec-websocket-extensions']).toBe('permessage-deflate; client_no_context_takeover; server_max_window_bits=10');
    const text = await expectReceived(stream, await publishOneByOne(app, publisherToken, subscriber.id, COUNT));
    // About 16 % for the seed's shape after the first.
    expect(stream.bytesRead()).toBeLessThan(0.4 * text);
  });

  it('lets an event of an event stream refer back to the one before it: a notification like the one before costs a fraction', async () => {
    // A subscriber of its own: what an event stream is sent stays unconfirmed, and would come again to the others' streams.
    const { subscriber: reader } = await parties(app);
    const stream = await openGzipEventStream(app, reader);
    expect(stream.headers['content-encoding']).toBe('gzip');
    const [first, second] = await costOfTwoAlike(app, publisherToken, reader.id, stream);
    expect(second).toBeLessThan(0.6 * first);
  });

  it('keeps no context for a client that asks for none', async () => {
    const stream = await connect(app, subscriber, { perMessageDeflate: { serverNoContextTakeover: true } });
    expect(stream.upgradeHeaders['sec-websocket-extensions']).toBe('permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10');
    const text = await expectReceived(stream, await publishOneByOne(app, publisherToken, subscriber.id, COUNT));
    expect(stream.bytesRead()).toBeGreaterThan(0.5 * text);
  });
});

describe('WS_COMPRESSION=off', () => {
  let app: TestApp;
  let subscriber: TestClient;
  let publisherToken: string;

  beforeAll(async () => {
    app = await startTestApp({ WS_COMPRESSION: 'off' });
    ({ subscriber, publisherToken } = await parties(app));
  });
  afterAll(() => app?.close());

  it('negotiates nothing with a client that offers permessage-deflate, and pushes uncompressed', async () => {
    const stream = await connect(app, subscriber);
    expect(stream.socket.extensions).toBe('');
    expect(stream.upgradeHeaders['sec-websocket-extensions']).toBeUndefined();
    const text = await expectReceived(stream, await publishOneByOne(app, publisherToken, subscriber.id, COUNT));
    expect(stream.bytesRead()).toBeGreaterThanOrEqual(text);
  });

  it('sends an event stream uncompressed to a client that accepts gzip', async () => {
    const { subscriber: reader } = await parties(app);
    const stream = await openGzipEventStream(app, reader);
    expect(stream.headers['content-encoding']).toBeUndefined();
    const body = validNotification(reader.id);
    expect((await publish(app, publisherToken, body)).status).toBe(202);
    await eventually(() => stream.text().includes(body.correlationId), 5_000, 'the notification');
  });
});
