import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { clientToken, SUBSCRIBE_SCOPE } from '../../factories/notification.factory.js';
import { createClient } from '../../factories/oauth.factory.js';
import { openStream, type Stream } from '../../factories/stream.factory.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/**
 * The stream's heartbeat per client (`client:create`/`client:update --heartbeat`), seen from real
 * `ws` clients: when their pings come, and when a client that stops answering is dropped. The
 * instance's default here is 2 s, so that a client's own 5 s is told apart within seconds.
 */

const DEFAULT_SECONDS = 2;
const OWN_SECONDS = 5;
/** A ping may come this much early or late: the heartbeat ticks once a second. */
const SLACK_MS = 1_200;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ WS_HEARTBEAT_INTERVAL: String(DEFAULT_SECONDS) });
});
afterAll(() => app?.close());

const streams: Stream[] = [];
afterEach(async () => {
  await Promise.all(streams.splice(0).map((stream) => stream.close()));
});

/** A subscriber client, with its own heartbeat when given. */
const subscriber = (heartbeatInterval?: number) =>
  createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE], ...(heartbeatInterval ? { heartbeatInterval } : {}) });

/** An open stream of `clientId` and when each heartbeat ping reached it (pings with a payload are the delivery's, not the heartbeat's). */
async function watch(client: { id: string; secret: string }, autoPong = true) {
  const stream = await openStream(app.baseUrl, await clientToken(app, client), { autoPong });
  streams.push(stream);
  const openedAt = Date.now();
  const pings: number[] = [];
  stream.socket.on('ping', (payload) => {
    if (payload.length === 0) pings.push(Date.now());
  });
  const closedAfter = stream.closed.then(({ code }) => ({ code, ms: Date.now() - openedAt }));
  return { stream, pings, closedAfter };
}

/** The time between each ping and the next, of those that came after `since`. */
const gaps = (pings: number[], since = 0) =>
  pings
    .filter((at) => at >= since)
    .slice(1)
    .map((at, index) => at - pings.filter((at) => at >= since)[index]);

const expectEvery = (found: number[], seconds: number) => {
  for (const gap of found) expect(Math.abs(gap - seconds * 1000), `a gap of ${gap} ms, not ${seconds} s`).toBeLessThan(SLACK_MS);
};

describe('a client with --heartbeat', () => {
  it('is pinged every its own seconds while another client is pinged at WS_HEARTBEAT_INTERVAL', async () => {
    const own = await watch(await subscriber(OWN_SECONDS));
    const plain = await watch(await subscriber());
    await sleep(3 * OWN_SECONDS * 1000 + 500);
    expect(own.pings.length).toBeGreaterThanOrEqual(3);
    expectEvery(gaps(own.pings), OWN_SECONDS);
    expect(plain.pings.length).toBeGreaterThanOrEqual(7);
    expectEvery(gaps(plain.pings), DEFAULT_SECONDS);
    expect(own.stream.socket.readyState).toBe(own.stream.socket.OPEN);
    expect(plain.stream.socket.readyState).toBe(plain.stream.socket.OPEN);
  }, 30_000);

  it('is dropped when it stops answering, after its own interval, not the default', async () => {
    const own = await watch(await subscriber(OWN_SECONDS), false);
    const plain = await watch(await subscriber(), false);
    // Dropped at the ping after the first unanswered one: within two intervals, and after more than one.
    const [ownClosed, plainClosed] = await Promise.all([own.closedAfter, plain.closedAfter]);
    expect(plainClosed.code).toBe(1006);
    expect(plainClosed.ms).toBeGreaterThan(DEFAULT_SECONDS * 1000 - 300);
    expect(plainClosed.ms).toBeLessThan(2 * DEFAULT_SECONDS * 1000 + SLACK_MS);
    expect(ownClosed.code).toBe(1006);
    expect(ownClosed.ms).toBeGreaterThan(OWN_SECONDS * 1000 - 300);
    expect(ownClosed.ms).toBeLessThan(2 * OWN_SECONDS * 1000 + SLACK_MS);
    expect(own.pings.length).toBeGreaterThanOrEqual(1);
  }, 30_000);

  it('follows client:update on its open streams: a new interval, then back to the default', async () => {
    const client = await subscriber();
    const watched = await watch(client);
    await app.get(ClientsService).update(client.id, { heartbeatInterval: OWN_SECONDS });
    // The change reaches the stream within a tick; a ping already due may still come at the old time.
    const changedAt = Date.now() + DEFAULT_SECONDS * 1000;
    await sleep(3 * OWN_SECONDS * 1000 + DEFAULT_SECONDS * 1000);
    expect(gaps(watched.pings, changedAt).length).toBeGreaterThanOrEqual(2);
    expectEvery(gaps(watched.pings, changedAt), OWN_SECONDS);

    await app.get(ClientsService).update(client.id, { heartbeatInterval: null });
    const backAt = Date.now() + OWN_SECONDS * 1000;
    await sleep(OWN_SECONDS * 1000 + 3 * DEFAULT_SECONDS * 1000 + 500);
    expect(gaps(watched.pings, backAt).length).toBeGreaterThanOrEqual(2);
    expectEvery(gaps(watched.pings, backAt), DEFAULT_SECONDS);
    expect(watched.stream.socket.readyState).toBe(watched.stream.socket.OPEN);
  }, 60_000);
});
