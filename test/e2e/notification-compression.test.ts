import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { clientToken, PUBLISH_SCOPE, type PublishBody, publish, pushedMessage, SUBSCRIBE_SCOPE, validNotification } from '../factories/notification.factory.js';
import { createClient, type TestClient } from '../factories/oauth.factory.js';
import { openStream, type Stream } from '../factories/stream.factory.js';
import { startTestApp, type TestApp } from '../setup/test-app.js';

/**
 * permessage-deflate on the notification stream (WS_COMPRESSION), seen from real `ws` clients:
 * what the 101 answer negotiates, that notifications arrive intact and in order whether sent one
 * at a time or in a burst, and the bytes they take on the wire.
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
});
