import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { clientToken, PUBLISH_SCOPE, type PublishBody, publish, pushedMessage, SUBSCRIBE_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { closeStreamClients, eventually, openSse, openV2, type SseClient, WS_PATH } from '../../factories/stream-clients.js';
import { ensureNginx, type Nginx, startNginx } from '../../setup/nginx.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// What a ship behind a real reverse proxy (nginx, test/setup/nginx.ts) sees of the notification
// stream. The corporate proxy passes no WebSocket upgrade, buffers, gzips and times out a silent
// response after READ_TIMEOUT_S, shorter than the default heartbeat (30 s): the WebSocket stream
// fails through it, server-sent events deliver at once, stay open on the heartbeat comment and
// resume with Last-Event-ID after the proxy restarts. A proxy that passes the upgrade carries
// protocol v2, which resumes with ?after=SEQ&epoch=E after the same cut. Every check compares
// what the client received with the list of notifications the service answered 202.

/** The proxy's proxy_read_timeout: below the default heartbeat, above the service's. */
const READ_TIMEOUT_S = 4;
/** The service's WS_HEARTBEAT_INTERVAL: its comment line reaches the proxy before the read timeout. */
const HEARTBEAT_S = 2;
/** "At once" for a ship: a notification published is on the device within this. */
const PROMPT_MS = 1_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const nginx = ensureNginx();
const missing = 'missing' in nginx ? nginx.missing : undefined;
if (missing) console.warn(`notification-proxy.test.ts is skipped: ${missing}`);

const subscriberClient = (app: TestApp) => createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
const publisherToken = async (app: TestApp) => clientToken(app, await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] }), PUBLISH_SCOPE);

async function publishTo(app: TestApp, publisher: string, recipient: string): Promise<PublishBody> {
  const body = validNotification(recipient);
  const response = await publish(app, publisher, body);
  expect(response.status).toBe(202);
  return body;
}

/**
 * Publishes to `recipient` one after another, a pause between them, until stopped: the
 * notifications answered 202, in the order they were answered (the order they must arrive in).
 */
function keepPublishing(app: TestApp, publisher: string, recipient: string, pauseMs = 100) {
  const accepted: PublishBody[] = [];
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      accepted.push(await publishTo(app, publisher, recipient));
      await sleep(pauseMs);
    }
  })();
  return {
    accepted,
    async stop(): Promise<PublishBody[]> {
      stopping = true;
      await loop;
      return accepted;
    },
  };
}

/** `promise`, or a failure naming `what` after `ms` (a proxy that holds a response back holds its headers too). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** The correlation ids a client received, in arrival order (each notification is unique by it). */
const receivedIds = (notifications: Record<string, unknown>[]) => notifications.map((notification) => notification.correlationId);
const acceptedIds = (bodies: PublishBody[]) => bodies.map((body) => body.correlationId);

/** The seed's stream (no subprotocol): resolves with the HTTP status the handshake got instead of 101. */
function openSeedStream(baseUrl: string, token: string): Promise<number> {
  const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}${WS_PATH}`, { headers: { Authorization: `Bearer ${token}` } });
  return new Promise((resolve, reject) => {
    ws.once('open', () => {
      ws.terminate();
      resolve(101);
    });
    ws.once('unexpected-response', (_request, response) => {
      ws.terminate();
      resolve(response.statusCode!);
    });
    ws.once('error', reject);
  });
}

/** Every time the EventSource lost its connection (it reconnects by itself after each). */
function countDrops(client: SseClient): { count: number } {
  const drops = { count: 0 };
  client.source.addEventListener('error', () => drops.count++);
  return drops;
}

afterEach(() => closeStreamClients());

describe.skipIf(missing !== undefined)(
  missing ? `the stream through a corporate proxy — SKIPPED: ${missing}` : 'the stream through a corporate proxy (no WebSocket upgrade, buffering, gzip, a read timeout below the default heartbeat)',
  () => {
    let app: TestApp;
    let publisher: string;
    /** The harness's default: no upgrade, buffering and gzip on; the client's Accept-Encoding reaches the service, which compresses. */
    let proxy: Nginx;
    /** As proxies that inspect content: the service is asked for identity and the proxy compresses itself. */
    let compressingProxy: Nginx;
    let client: TestClient;
    let token: string;

    beforeAll(async () => {
      app = await startTestApp({ WS_HEARTBEAT_INTERVAL: String(HEARTBEAT_S) });
      const upstreamPort = Number(new URL(app.baseUrl).port);
      proxy = await startNginx({ upstreamPort, readTimeoutSeconds: READ_TIMEOUT_S });
      compressingProxy = await startNginx({ upstreamPort, readTimeoutSeconds: READ_TIMEOUT_S, extraDirectives: ['proxy_set_header Accept-Encoding "";'] });
      publisher = await publisherToken(app);
    });
    afterAll(async () => {
      await proxy?.stop();
      await compressingProxy?.stop();
      await app?.close();
    });

    async function freshSubscriber() {
      client = await subscriberClient(app);
      token = await clientToken(app, client);
    }

    it('fails the WebSocket stream, v1 and protocol v2: the handshake is answered without an upgrade', async () => {
      await freshSubscriber();
      const seedStatus = await openSeedStream(proxy.baseUrl, token);
      const v2Refusal = await openV2(proxy.baseUrl, token).then(
        () => ({ status: 101 }),
        (error: { status?: number }) => ({ status: error.status }),
      );
      // Not upgraded, the handshake reaches the service as a plain GET, which has no route there.
      for (const status of [seedStatus, v2Refusal.status]) {
        expect(status).not.toBe(101);
        expect(status).toBeGreaterThanOrEqual(400);
        expect(status).toBeLessThan(500);
      }
    });

    it('delivers server-sent events within a second of the 202, whether the service compresses (gzip flushed per burst) or the proxy does (X-Accel-Buffering: no)', async () => {
      await freshSubscriber();
      const throughProxy = await within(openSse(app.baseUrl, token, { via: proxy.baseUrl, gzip: true }), 5_000, 'the stream through the proxy to open');
      const throughCompressor = await within(openSse(app.baseUrl, token, { via: compressingProxy.baseUrl, gzip: true }), 5_000, 'the stream through the compressing proxy to open');
      const arrivals = new Map<SseClient, number[]>([
        [throughProxy, []],
        [throughCompressor, []],
      ]);
      for (const [source, times] of arrivals) source.source.addEventListener('notification', () => times.push(Date.now()));
      // One after another, each soon after the previous arrived: one held back until the next
      // keepalive comment flushes the stream would arrive most of a heartbeat late.
      const bodies: PublishBody[] = [];
      const delays = { serviceCompresses: [] as number[], proxyCompresses: [] as number[] };
      for (let index = 0; index < 5; index++) {
        const body = await publishTo(app, publisher, client.id);
        const acceptedAt = Date.now();
        bodies.push(body);
        await eventually(() => [...arrivals.values()].every((times) => times.length === bodies.length), 5_000, `notification ${index + 1} through both proxies`);
        delays.serviceCompresses.push(arrivals.get(throughProxy)![index] - acceptedAt);
        delays.proxyCompresses.push(arrivals.get(throughCompressor)![index] - acceptedAt);
        await sleep(200);
      }
      const late = (ms: number[]) => ms.filter((delay) => delay > PROMPT_MS);
      expect({ serviceCompresses: late(delays.serviceCompresses), proxyCompresses: late(delays.proxyCompresses) }).toEqual({ serviceCompresses: [], proxyCompresses: [] });
      for (const source of arrivals.keys()) {
        expect(source.notifications()).toEqual(bodies.map(pushedMessage));
        expect(source.opens).toBe(1);
      }
    });

    it('keeps a server-sent event stream open past the proxy’s read timeout with the heartbeat comment, where a heartbeat slower than the timeout is cut', async () => {
      await freshSubscriber();
      const stream = await openSse(app.baseUrl, token, { via: proxy.baseUrl });
      const drops = countDrops(stream);
      // The same service behind a proxy whose read timeout (1 s) is shorter than its heartbeat (2 s).
      const impatient = await startNginx({ upstreamPort: Number(new URL(app.baseUrl).port), readTimeoutSeconds: 1 });
      try {
        const cut = await openSse(app.baseUrl, token, { via: impatient.baseUrl });
        const cutDrops = countDrops(cut);
        await sleep(READ_TIMEOUT_S * 1_000 * 1.5);
        expect(cutDrops.count).toBeGreaterThanOrEqual(1);
        expect(drops.count).toBe(0);
        expect(stream.opens).toBe(1);
        // Still the same connection, and it still delivers.
        const body = await publishTo(app, publisher, client.id);
        await eventually(() => stream.notifications().length === 1, 5_000, 'the notification after the read timeout');
        expect(stream.notifications()).toEqual([pushedMessage(body)]);
        expect(stream.opens).toBe(1);
      } finally {
        await impatient.stop();
      }
    });

    it('resumes server-sent events with Last-Event-ID after the proxy restarts: every 202’d notification exactly once, in order', async () => {
      await freshSubscriber();
      const stream = await openSse(app.baseUrl, token, { via: proxy.baseUrl });
      const drops = countDrops(stream);
      const publishing = keepPublishing(app, publisher, client.id);
      await eventually(() => stream.notifications().length >= 5, 5_000, 'notifications before the restart');
      await proxy.restart();
      // The EventSource reconnects by itself (after its 3 s reconnection time); publishing goes on meanwhile and after.
      await eventually(() => stream.opens === 2, 10_000, 'the EventSource to reconnect');
      const atReconnect = publishing.accepted.length;
      await eventually(() => publishing.accepted.length >= atReconnect + 10, 10_000, 'publishes after the reconnect');
      const accepted = await publishing.stop();
      await eventually(() => stream.notifications().length >= accepted.length, 10_000, 'every accepted notification');
      await sleep(500); // anything sent twice would arrive meanwhile
      expect(drops.count).toBe(1);
      expect(receivedIds(stream.notifications())).toEqual(acceptedIds(accepted));
      // The reconnect said where the client was: the last event it had received before the cut.
      const [first, second] = stream.sentLastEventIds;
      expect(first).toBeNull();
      expect(Number(second)).toBeGreaterThan(0);
      const beforeCut = stream.events.filter((event) => Number(event.id) <= Number(second));
      expect(beforeCut.at(-1)!.id).toBe(second);
      expect(beforeCut.length).toBeGreaterThanOrEqual(5);
      expect(beforeCut.length).toBeLessThan(accepted.length);
    });
  },
);

describe.skipIf(missing !== undefined)(missing ? `protocol v2 through a proxy that passes the upgrade — SKIPPED: ${missing}` : 'protocol v2 through a proxy that passes the upgrade', () => {
  let app: TestApp;
  let proxy: Nginx;

  beforeAll(async () => {
    app = await startTestApp({ WS_HEARTBEAT_INTERVAL: String(HEARTBEAT_S) });
    proxy = await startNginx({ upstreamPort: Number(new URL(app.baseUrl).port), websocket: true, readTimeoutSeconds: READ_TIMEOUT_S });
  });
  afterAll(async () => {
    await proxy?.stop();
    await app?.close();
  });

  it('delivers, and a client cut by the proxy’s restart resumes with ?after=SEQ&epoch=E: every 202’d notification exactly once, in order', async () => {
    const client = await subscriberClient(app);
    const token = await clientToken(app, client);
    const publisher = await publisherToken(app);
    const first = await openV2(proxy.baseUrl, token);
    expect(first.ws.protocol).toBe('voyage.v2');
    const publishing = keepPublishing(app, publisher, client.id);
    await eventually(() => first.notifications().length >= 5, 5_000, 'notifications before the restart');
    await proxy.restart();
    expect((await first.closed).code).toBe(1006); // cut, without a close frame
    // Published while the device is away: it must get these on its resume.
    await eventually(() => publishing.accepted.length >= first.notifications().length + 10, 10_000, 'publishes while away');
    const position = first.notifications().at(-1)!;
    const second = await openV2(proxy.baseUrl, token, { after: position.seq, epoch: position.epoch });
    const atResume = publishing.accepted.length;
    await eventually(() => publishing.accepted.length >= atResume + 20, 10_000, 'publishes after the resume');
    const accepted = await publishing.stop();
    const received = () => [...first.notifications(), ...second.notifications()];
    await eventually(() => received().length >= accepted.length, 10_000, 'every accepted notification');
    await sleep(500); // anything sent twice would arrive meanwhile
    expect(second.messages[0].type).toBe('notification'); // the history is complete: no reset
    expect(second.notifications()[0].seq).toBeGreaterThan(position.seq!);
    expect(receivedIds(received().map((message) => message.data!))).toEqual(acceptedIds(accepted));
    const seqs = received().map((message) => message.seq!);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(received().map((message) => message.epoch))).toEqual(new Set([position.epoch]));
  });
});
