/**
 * The ship benchmarks of issue 25: what a day of notifications costs on the wire, and how the
 * stream behaves over a satellite link, for the seed's stream (v1), protocol v2 and server-sent
 * events. The result is the ratio to v1 measured in the same run.
 *
 *   npm run build   # once: dist/ must exist
 *   npx tsx bench/ships.ts [--only bytes,satellite] [--notifications 100] [--keepalive-window 20]
 *       [--token-refreshes 3] [--runs 2]
 *       [--sat-rounds 3] [--sat-notifications 20] [--sat-spacing 400] [--sat-heartbeat 10] [--sat-cut 10]
 *
 * bytes: bytes on the wire for a day. Every client talks to the real service through its own
 *   byte-counting relay (bench/lib/byte-counting-relay.ts: all TCP payload, both ways), and each
 *   ingredient of a day is measured there:
 *   - a notification of the seed's shape (test/factories/notification.factory.ts), with what the
 *     client sends back (v1's pong to the delivery ping, v2's ack): --notifications published one
 *     at a time, each after the one before was received and answered; the first on a connection
 *     apart from the others, which a compression context kept along the connection (SSE's gzip,
 *     context takeover) makes cheaper;
 *   - a connection's setup, as a reconnection makes it (v2 with ?after=&epoch=, SSE with
 *     Last-Event-ID): the upgrade, or the event stream's request and response up to its first
 *     comment;
 *   - one keepalive (ping and pong; an event stream's comment): a client of the service's 1 s
 *     heartbeat, over --keepalive-window s, divided by the exchanges seen;
 *   - the token's lifetime, on services whose tokens live 20 s: v1 and SSE are closed at
 *     expiry (4003; `event: token-expired` and the stream's end), which costs that close and a new
 *     setup; v2 is told `expiring` and replaces its token in band (--token-refreshes, divided).
 *   The day is 100 notifications, 2 reconnections, 86,400 / heartbeat keepalives, and 24 token
 *   lifetimes (CLIENT_TOKEN_TTL's default 3600 s); each connection begun that day (26 for v1 and
 *   SSE, 2 for v2) takes its first notification at a first's cost. Variants: v1 (offering no
 *   compression, as the seed's clients; and offering it, as ws does by default), v2 with and
 *   without permessage-deflate, SSE with and without gzip, all on WS_COMPRESSION=on, and v2 on
 *   WS_COMPRESSION=context-takeover. The token requests themselves are the same for
 *   every transport and are left out. Seqs are made 9 digits long (the sequence is moved to
 *   10^8 first), as on a service that has stored that many, since seqs are in v1's pings, v2's
 *   messages and acks, and SSE's ids. Clients measured without keepalive or token expiry in the
 *   way have `--heartbeat 3600`.
 *
 * satellite: the subscribers run inside a network namespace behind bench/lib/satellite-link.ts
 *   (600 ms one way, 1 % loss, 512 kbit/s; relay emulation where the kernel has no netem), one
 *   process each (bench/lib/ship-subscriber.ts), v1, v2 + permessage-deflate and SSE + gzip at
 *   once, each with a client of `--heartbeat --sat-heartbeat`; the service and the publisher are
 *   outside. Each round:
 *   - publish → receipt: --sat-notifications per transport, one publish every --sat-spacing ms
 *     taking the transports in turn; from the 202 at the publisher to the subscriber's receipt;
 *   - resume after a cut: the link carries nothing for --sat-cut s and its connections are lost
 *     (`cut(ms, { connections: 'drop' })`); one notification per transport is published 2 s into
 *     the cut; from the link's return to that notification's receipt, and when each subscriber
 *     noticed (its liveness check: two heartbeats and 2 s of silence) and opened again.
 *   All three subscribers follow one policy (bench/lib/ship-subscriber.ts).
 *
 * Prints the tables, writes bench/results/ships-<timestamp>.json.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { pushedMessage, validNotification } from '../test/factories/notification.factory.js';
import { startByteCountingRelay, type WireBytes } from './lib/byte-counting-relay.js';
import { withDatabase } from './lib/fixtures.js';
import { machine, ROOT, type RunningService, startService } from './lib/harness.js';
import { openSatelliteLink, type SatelliteLink } from './lib/satellite-link.js';
import { openShipStream, type ShipStream, type ShipTransport } from './lib/ship-clients.js';
import { median, now, percentile, round, sleep } from './lib/ws-common.js';
import { type Client, clientToken, cloneClients, createPublisher } from './lib/ws-fixtures.js';

const { values } = parseArgs({
  options: {
    only: { type: 'string', default: 'bytes,satellite' },
    notifications: { type: 'string', default: '100' },
    'keepalive-window': { type: 'string', default: '20' },
    'token-refreshes': { type: 'string', default: '3' },
    runs: { type: 'string', default: '2' },
    'sat-rounds': { type: 'string', default: '3' },
    'sat-notifications': { type: 'string', default: '20' },
    'sat-spacing': { type: 'string', default: '400' },
    'sat-heartbeat': { type: 'string', default: '10' },
    'sat-cut': { type: 'string', default: '10' },
  },
});
const settings = {
  only: values.only!.split(','),
  notifications: Number(values.notifications),
  keepaliveWindowS: Number(values['keepalive-window']),
  tokenRefreshes: Number(values['token-refreshes']),
  runs: Number(values.runs),
  satRounds: Number(values['sat-rounds']),
  satNotifications: Number(values['sat-notifications']),
  satSpacingMs: Number(values['sat-spacing']),
  satHeartbeatS: Number(values['sat-heartbeat']),
  satCutS: Number(values['sat-cut']),
};

/** A day as the issue describes it. */
const DAY = {
  notifications: 100,
  reconnects: 2,
  /** CLIENT_TOKEN_TTL's default: a token an hour. */
  tokenLifetimes: 86_400 / 3600,
  /** The default (WS_HEARTBEAT_INTERVAL) first: the seed's day is v1's at it. */
  heartbeatsS: [30, 300],
};

/** The figure the issue sets: v2 with compression at most this share of v1's bytes. */
const TARGET_SHARE = 0.4;

interface Variant {
  id: string;
  title: string;
  transport: ShipTransport;
  compress: boolean;
  /** The service's WS_COMPRESSION (default on). */
  wsCompression?: 'on' | 'context-takeover';
}

const VARIANTS: Variant[] = [
  { id: 'v1', title: "v1 (the seed's clients offer no compression)", transport: 'v1', compress: false },
  { id: 'v2-deflate', title: 'v2 + permessage-deflate (WS_COMPRESSION=on)', transport: 'v2', compress: true },
  { id: 'v2', title: 'v2 without compression', transport: 'v2', compress: false },
  { id: 'sse-gzip', title: 'SSE + gzip', transport: 'sse', compress: true },
  { id: 'sse', title: 'SSE plain', transport: 'sse', compress: false },
  { id: 'v1-deflate', title: 'v1 offering permessage-deflate (as ws and browsers do by default)', transport: 'v1', compress: true },
  { id: 'v2-deflate-context', title: 'v2 + permessage-deflate, WS_COMPRESSION=context-takeover', transport: 'v2', compress: true, wsCompression: 'context-takeover' },
];
const wsCompressionOf = (variant: Variant) => variant.wsCompression ?? 'on';
/** The services' WS_COMPRESSION settings the variants need: one service (of each kind) per setting. */
const WS_COMPRESSIONS = [...new Set(VARIANTS.map(wsCompressionOf))];

/** The satellite link's three: what a ship would pick. */
const SATELLITE_VARIANTS = ['v1', 'v2-deflate', 'sse-gzip'].map((id) => VARIANTS.find((variant) => variant.id === id)!);

const NOTIFICATIONS_PATH = '/voyage/notification/v1/notifications';
const progress = (line: string) => console.error(line);

// ------------------------------------------------------------------ fixtures

interface Publisher {
  publish(recipient: string): Promise<{ id: string; acceptedAt: number; status: number }>;
}

async function publisherOf(service: RunningService): Promise<Publisher> {
  const token = await clientToken(service.base, await createPublisher(service), 'notification:publish');
  return {
    async publish(recipient) {
      const body = validNotification(recipient);
      const response = await fetch(`${service.base}${NOTIFICATIONS_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      });
      const acceptedAt = now();
      await response.arrayBuffer();
      if (response.status !== 202) throw new Error(`publish answered ${response.status}`);
      return { id: body.correlationId, acceptedAt, status: response.status };
    },
  };
}

/** `count` subscriber clients with `--heartbeat` (or the service's), the first made by the CLI and the rest copied. */
async function subscribers(service: RunningService, count: number, heartbeatS?: number): Promise<Client[]> {
  const args = ['client:create', '--name', `ship-${Date.now()}-${heartbeatS ?? 'default'}`, '--grant', 'client_credentials'];
  if (heartbeatS !== undefined) args.push('--heartbeat', String(heartbeatS));
  const template = (await service.cli(...args)) as Client;
  return [template, ...(await cloneClients(service, template, count - 1))];
}

/** Seqs of nine digits, as on a service that has stored 10^8 notifications. */
const longSeqs = (service: RunningService) =>
  withDatabase(service, (db) => db.query(`SELECT setval(pg_get_serial_sequence('notifications', 'seq'), 100000000)`));

async function until(condition: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(10);
  }
}

// ------------------------------------------------------------------ bytes on the wire for a day

interface Ingredients {
  /** Per notification, its answer included; the first on a connection, and the average of the rest (a compression context makes them cheaper). */
  notification: WireBytes & { min: number; max: number; first: number; following: number };
  /** A reconnection's setup. */
  setup: WireBytes;
  /** One keepalive exchange, and how many were seen. */
  keepalive: WireBytes & { exchanges: number };
  /** v1, SSE: the close at expiry (4003; token-expired and the end). */
  expiryClose?: WireBytes & { why: string };
  /** v2: one in-band refresh (`expiring`, then the token message), and the `in` it was told. */
  refresh?: WireBytes & { expiringIn: number[] };
}

const perItem = (bytes: WireBytes, count: number): WireBytes => ({ up: bytes.up / count, down: bytes.down / count, total: bytes.total / count });

/** Notifications one at a time on a first connection, then a reconnection's setup (service with WS_HEARTBEAT_INTERVAL=1, client with --heartbeat 3600). */
async function notificationsAndSetup(service: RunningService, publisher: Publisher, variant: Variant, client: Client) {
  const relay = await startByteCountingRelay(Number(new URL(service.base).port));
  try {
    const token = await clientToken(service.base, client);
    const received: string[] = [];
    const base = { base: relay.base, token, transport: variant.transport, compress: variant.compress, onNotification: ({ data }: { data: Record<string, unknown> }) => received.push(String(data.correlationId)) };
    const first = openShipStream(base);
    await first.opened;
    await relay.quiet(300);
    const each: number[] = [];
    const from = Date.now();
    for (let index = 0; index < settings.notifications; index++) {
      const start = Date.now();
      const { id } = await publisher.publish(client.client_id);
      await until(() => received.includes(id), 10_000, `notification ${index} on ${variant.id}`);
      // Its answer (pong, ack) crosses, and nothing else is on its way.
      await relay.quiet(50);
      each.push(relay.bytes(start).total);
    }
    const following = each.slice(1).reduce((sum, value) => sum + value, 0) / (each.length - 1);
    const notification = { ...perItem(relay.bytes(from), settings.notifications), min: Math.min(...each), max: Math.max(...each), first: each[0], following };
    const position = first.position();
    first.close();
    await relay.quiet(300);

    const mark = Date.now();
    const again = openShipStream({ ...base, resume: position.seq === undefined ? undefined : { seq: position.seq, epoch: position.epoch } });
    await again.opened;
    await relay.quiet(300);
    const setup = relay.bytes(mark);
    again.close();
    if (received.length !== settings.notifications) throw new Error(`${variant.id}: ${received.length} received of ${settings.notifications} (a resume replayed some?)`);
    return { notification, setup };
  } finally {
    await relay.close();
  }
}

/** One client of the service's 1 s heartbeat: keepalive exchanges over the window, divided. */
async function keepalive(service: RunningService, variant: Variant, client: Client) {
  const relay = await startByteCountingRelay(Number(new URL(service.base).port));
  try {
    const stream = openShipStream({ base: relay.base, token: await clientToken(service.base, client), transport: variant.transport, compress: variant.compress });
    await stream.opened;
    // The heartbeat's first tick reads the client's interval; from the next, one exchange a second.
    await sleep(2_500);
    await relay.quiet(200);
    const from = Date.now();
    await sleep(settings.keepaliveWindowS * 1000);
    await relay.quiet(200);
    const to = Date.now();
    stream.close();
    const exchanges = relay.exchanges(from, to, 300);
    return { ...perItem(relay.bytes(from, to), exchanges), exchanges };
  } finally {
    await relay.close();
  }
}

/** On the service whose tokens live 20 s: the close at expiry (v1, SSE) or the in-band refreshes (v2). */
async function tokenLifetime(service: RunningService, variant: Variant, client: Client): Promise<Pick<Ingredients, 'expiryClose' | 'refresh'>> {
  const relay = await startByteCountingRelay(Number(new URL(service.base).port));
  try {
    let why: string | undefined;
    const expiringIn: number[] = [];
    let answered = 0;
    const stream: ShipStream = openShipStream({
      base: relay.base,
      token: await clientToken(service.base, client),
      transport: variant.transport,
      compress: variant.compress,
      onEnd: (reason) => (why ??= reason),
      onExpiring: (seconds) => {
        expiringIn.push(seconds);
        void clientToken(service.base, client).then((token) => {
          stream.replaceToken(token);
          answered++;
        });
      },
    });
    await stream.opened;
    await relay.quiet(300);
    const from = Date.now();
    if (variant.transport === 'v2') {
      await until(() => answered >= settings.tokenRefreshes, 30_000 * settings.tokenRefreshes, `${settings.tokenRefreshes} refreshes on ${variant.id}`);
      await relay.quiet(500);
      const to = Date.now();
      stream.close();
      if (why) throw new Error(`${variant.id}: the stream ended (${why}) while refreshing in band`);
      return { refresh: { ...perItem(relay.bytes(from, to), answered), expiringIn } };
    }
    await until(() => why !== undefined, 40_000, `the token's expiry on ${variant.id}`);
    await relay.quiet(500);
    const close = relay.bytes(from);
    stream.close();
    return { expiryClose: { ...close, why: why! } };
  } finally {
    await relay.close();
  }
}

/** The length of a subscriber's access token (in the Authorization header of every setup, and in v2's token message). */
let tokenChars = 0;

async function bytesScenario(): Promise<Record<string, Ingredients>[]> {
  const runs: Record<string, Ingredients>[] = [];
  for (let run = 0; run < settings.runs; run++) {
    const found: Record<string, Partial<Ingredients>> = Object.fromEntries(VARIANTS.map((variant) => [variant.id, {}]));
    for (const wsCompression of WS_COMPRESSIONS) {
      const variants = VARIANTS.filter((variant) => wsCompressionOf(variant) === wsCompression);
      // A 1 s heartbeat for the keepalive clients; the others ask for an hour's.
      const main = await startService({ WS_HEARTBEAT_INTERVAL: '1', WS_COMPRESSION: wsCompression });
      try {
        await longSeqs(main);
        const publisher = await publisherOf(main);
        const quiet = await subscribers(main, variants.length, 3600);
        const beating = await subscribers(main, variants.length);
        // Every setup and v2's token message carry one: its length is context for the table.
        tokenChars = (await clientToken(main.base, quiet[0])).length;
        for (const [index, variant] of variants.entries()) {
          Object.assign(found[variant.id], await notificationsAndSetup(main, publisher, variant, quiet[index]));
          const { notification, setup } = found[variant.id] as Ingredients;
          progress(`bytes run ${run + 1}, ${variant.id}: ${round(notification.total)} B a notification (first ${notification.first}, then ${round(notification.following)}), setup ${setup.total} B`);
        }
        // Side by side: the keepalives of each client cross its own relay.
        const beats = await Promise.all(variants.map((variant, index) => keepalive(main, variant, beating[index])));
        variants.forEach((variant, index) => {
          found[variant.id].keepalive = beats[index];
          progress(`bytes run ${run + 1}, ${variant.id}: ${round(beats[index].total)} B a keepalive (${beats[index].exchanges} seen)`);
        });
      } finally {
        await main.stop();
      }
    }
    // Every variant at once, each on a service of its WS_COMPRESSION whose tokens live 20 s.
    const shortTokens = await Promise.all(WS_COMPRESSIONS.map((wsCompression) => startService({ CLIENT_TOKEN_TTL: '20', WS_HEARTBEAT_INTERVAL: '3600', WS_COMPRESSION: wsCompression })));
    try {
      await Promise.all(
        WS_COMPRESSIONS.map(async (wsCompression, serviceIndex) => {
          const service = shortTokens[serviceIndex];
          const variants = VARIANTS.filter((variant) => wsCompressionOf(variant) === wsCompression);
          const clients = await subscribers(service, variants.length);
          const lifetimes = await Promise.all(variants.map((variant, index) => tokenLifetime(service, variant, clients[index])));
          variants.forEach((variant, index) => {
            Object.assign(found[variant.id], lifetimes[index]);
            const { expiryClose, refresh } = lifetimes[index];
            progress(`bytes run ${run + 1}, ${variant.id}: ${expiryClose ? `close at expiry ${expiryClose.total} B (${expiryClose.why})` : `refresh ${round(refresh!.total)} B (told in ${refresh!.expiringIn.join(', ')} s)`}`);
          });
        }),
      );
    } finally {
      await Promise.all(shortTokens.map((service) => service.stop()));
    }
    runs.push(found as Record<string, Ingredients>);
  }
  return runs;
}

interface DayRow {
  variant: string;
  title: string;
  heartbeatS: number;
  /** Connections that begin in the day: each one's first notification costs a first's bytes. */
  connections: number;
  notifications: number;
  reconnects: number;
  keepalive: number;
  tokenLifetime: number;
  total: number;
  /** To v1 at the same heartbeat. */
  ratioToV1: number;
  /** To v1 at the default heartbeat (30 s): the seed as it was, before per-client heartbeats. */
  ratioToSeed: number;
}

/** A day composed from one run's ingredients. */
function days(ingredients: Record<string, Ingredients>): DayRow[] {
  const rows: DayRow[] = [];
  let seed: number | undefined;
  for (const heartbeatS of DAY.heartbeatsS) {
    const row = (variant: Variant): Omit<DayRow, 'ratioToV1' | 'ratioToSeed'> => {
      const found = ingredients[variant.id];
      // v1 and SSE: each token ends its connection, and the next one is set up; v2 refreshes in band.
      const connections = DAY.reconnects + (found.refresh ? 0 : DAY.tokenLifetimes);
      // A compression context (SSE's gzip, context takeover) starts empty on each connection: its first notification costs more.
      const firsts = Math.min(connections, DAY.notifications);
      const notifications = firsts * found.notification.first + (DAY.notifications - firsts) * found.notification.following;
      const reconnects = DAY.reconnects * found.setup.total;
      const keepalive = (86_400 / heartbeatS) * found.keepalive.total;
      const tokenLifetime = DAY.tokenLifetimes * (found.refresh ? found.refresh.total : found.expiryClose!.total + found.setup.total);
      return { variant: variant.id, title: variant.title, heartbeatS, connections, notifications, reconnects, keepalive, tokenLifetime, total: notifications + reconnects + keepalive + tokenLifetime };
    };
    const v1 = row(VARIANTS[0]);
    if (heartbeatS === 30) seed = v1.total;
    for (const variant of VARIANTS) {
      const day = row(variant);
      rows.push({ ...day, ratioToV1: day.total / v1.total, ratioToSeed: day.total / seed! });
    }
  }
  return rows;
}

// ------------------------------------------------------------------ the satellite link

interface SubscriberLine {
  event: 'open' | 'notification' | 'dead' | 'end';
  at: number;
  id?: string;
  why?: string;
  silentMs?: number;
  attempt?: number;
}

interface Subscriber {
  variant: Variant;
  clientId: string;
  lines: SubscriberLine[];
  child: ChildProcess;
  receivedAt(id: string): number | undefined;
}

const SUBSCRIBER_SCRIPT = fileURLToPath(new URL('./lib/ship-subscriber.ts', import.meta.url));

function spawnSubscriber(link: SatelliteLink, variant: Variant, client: Client, token: string): Subscriber {
  const args = ['--import', 'tsx', SUBSCRIBER_SCRIPT, '--transport', variant.transport, '--base', `http://${link.host}:${link.port}`, '--token', token, '--heartbeat', String(settings.satHeartbeatS)];
  if (variant.compress) args.push('--compress');
  const child = link.exec(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: SubscriberLine[] = [];
  const receipts = new Map<string, number>();
  createInterface({ input: child.stdout! }).on('line', (text) => {
    const line = JSON.parse(text) as SubscriberLine;
    lines.push(line);
    if (line.event === 'notification' && !receipts.has(line.id!)) receipts.set(line.id!, line.at);
    if (line.event !== 'notification') progress(`satellite ${variant.id}: ${line.event}${line.why ? ` (${line.why})` : ''}${line.silentMs ? ` after ${line.silentMs} ms of silence` : ''}`);
  });
  return { variant, clientId: client.client_id, lines, child, receivedAt: (id) => receipts.get(id) };
}

interface Delivery {
  variant: string;
  acceptedAt: number;
  receivedAt?: number;
}

interface CutResult {
  variant: string;
  /** Relative to the link's return (ms): when the subscriber gave the old connection up, opened again, and received the notification published during the cut. */
  noticedMs?: number;
  noticedBy?: string;
  reopenedMs?: number;
  receivedMs?: number;
  attempts: number;
}

interface SatelliteRound {
  deliveries: Delivery[];
  cut: CutResult[];
  lossesEmulated: number;
}

async function satelliteScenario(): Promise<{ emulation: string; rounds: SatelliteRound[] }> {
  const service = await startService();
  let link: SatelliteLink | undefined;
  try {
    const publisher = await publisherOf(service);
    const clients = await subscribers(service, SATELLITE_VARIANTS.length, settings.satHeartbeatS);
    link = await openSatelliteLink({ upstreamPort: Number(new URL(service.base).port) });
    progress(`satellite link: ${link.emulation} emulation`);
    const subs = await Promise.all(SATELLITE_VARIANTS.map(async (variant, index) => spawnSubscriber(link!, variant, clients[index], await clientToken(service.base, clients[index]))));
    await until(() => subs.every((sub) => sub.lines.some((line) => line.event === 'open')), 60_000, 'every subscriber open behind the link');
    const rounds: SatelliteRound[] = [];
    for (let round = 0; round < settings.satRounds; round++) {
      const lossesBefore = link.lossesEmulated();
      const deliveries = await latencies(publisher, subs, round);
      const cut = await cutAndResume(link, publisher, subs);
      rounds.push({ deliveries, cut, lossesEmulated: link.lossesEmulated() - lossesBefore });
      for (const sub of subs) {
        const mine = deliveries.filter((delivery) => delivery.variant === sub.variant.id && delivery.receivedAt);
        const cutOf = cut.find((result) => result.variant === sub.variant.id)!;
        progress(
          `satellite round ${round + 1}, ${sub.variant.id}: median ${median(mine.map((d) => d.receivedAt! - d.acceptedAt))} ms over ${mine.length}; after the cut: noticed ${cutOf.noticedMs} ms, open ${cutOf.reopenedMs} ms, received ${cutOf.receivedMs} ms`,
        );
      }
    }
    return { emulation: link.emulation, rounds };
  } finally {
    await link?.close();
    await service.stop();
  }
}

/** Publishes taking the transports in turn, one every --sat-spacing ms; then waits for every receipt. */
async function latencies(publisher: Publisher, subs: Subscriber[], round: number): Promise<Delivery[]> {
  const published: (Delivery & { id: string; sub: Subscriber })[] = [];
  for (let index = 0; index < settings.satNotifications; index++) {
    for (let turn = 0; turn < subs.length; turn++) {
      const sub = subs[(turn + index + round) % subs.length];
      const tick = sleep(settings.satSpacingMs);
      const { id, acceptedAt } = await publisher.publish(sub.clientId);
      published.push({ variant: sub.variant.id, acceptedAt, id, sub });
      await tick;
    }
  }
  await until(() => published.every((item) => item.sub.receivedAt(item.id) !== undefined), 30_000, 'every notification across the link').catch((error: Error) => progress(error.message));
  return published.map(({ variant, acceptedAt, id, sub }) => ({ variant, acceptedAt, receivedAt: sub.receivedAt(id) }));
}

/** One cut with its connections lost; a notification for each published 2 s into it. */
async function cutAndResume(link: SatelliteLink, publisher: Publisher, subs: Subscriber[]): Promise<CutResult[]> {
  await sleep(2_000);
  const cutAt = now();
  const linesBefore = subs.map((sub) => sub.lines.length);
  const cut = link.cut(settings.satCutS * 1000, { connections: 'drop' });
  await sleep(2_000);
  const published = await Promise.all(subs.map((sub) => publisher.publish(sub.clientId)));
  await cut;
  const backAt = now();
  await until(() => subs.every((sub, index) => sub.receivedAt(published[index].id) !== undefined), 120_000, 'the notifications published during the cut').catch((error: Error) =>
    progress(error.message),
  );
  return subs.map((sub, index) => {
    const after = sub.lines.slice(linesBefore[index]);
    const noticed = after.find((line) => line.event === 'dead' || line.event === 'end');
    const reopened = after.find((line) => line.event === 'open' && line.at > (noticed?.at ?? cutAt));
    const receivedAt = sub.receivedAt(published[index].id);
    const since = (at?: number) => (at === undefined ? undefined : Math.round(at - backAt));
    return {
      variant: sub.variant.id,
      noticedMs: since(noticed?.at),
      noticedBy: noticed?.event === 'dead' ? `liveness check (${noticed.silentMs} ms silent)` : noticed?.why,
      reopenedMs: since(reopened?.at),
      receivedMs: since(receivedAt),
      attempts: after.filter((line) => line.event === 'end').length + after.filter((line) => line.event === 'dead').length,
    };
  });
}

// ------------------------------------------------------------------ report

const bytes = (value: number) => `${Math.round(value).toLocaleString('en')} B`;
const kb = (value: number) => `${(value / 1000).toLocaleString('en', { maximumFractionDigits: 1, minimumFractionDigits: 1 })} kB`;

function reportBytes(runs: Record<string, Ingredients>[]) {
  const last = runs.at(-1)!;
  console.log('\n**Ingredients, measured on the wire** (TCP payload both ways; up = client → service)\n');
  console.log('| Transport | A notification and its answer: average (min–max) | first on a connection; then | A reconnection\'s setup | A keepalive | Token: close at expiry / in-band refresh |');
  console.log('|---|---|---|---|---|---|');
  for (const variant of VARIANTS) {
    const found = last[variant.id];
    const token = found.refresh
      ? `refresh ${bytes(found.refresh.total)} (${bytes(found.refresh.down)} down, ${bytes(found.refresh.up)} up)`
      : `close ${bytes(found.expiryClose!.total)} (${found.expiryClose!.why}), then a setup`;
    const n = found.notification;
    console.log(
      `| ${variant.title} | ${bytes(n.total)} (${n.min}–${n.max}): ${bytes(n.down)} down, ${bytes(n.up)} up | ${bytes(n.first)}; ${bytes(n.following)} | ${bytes(found.setup.total)} (${bytes(found.setup.up)} up) | ${bytes(found.keepalive.total)} (${found.keepalive.exchanges} seen) | ${token} |`,
    );
  }
  console.log('\n**A day**: 100 notifications (the first on each connection that begins that day at a first\'s cost), 2 reconnections, 86,400 / heartbeat keepalives, 24 token lifetimes\n');
  console.log('| Transport | Heartbeat | Connections begun | Notifications | Reconnections | Keepalive | Token lifetime | Day | Ratio to v1 (same heartbeat) | Target | Ratio to v1 at 30 s (the seed as it was) |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  const allDays = runs.map(days);
  for (const row of allDays.at(-1)!) {
    const ratios = allDays.map((day) => day.find((other) => other.variant === row.variant && other.heartbeatS === row.heartbeatS)!.ratioToV1);
    const ratio = ratios.length > 1 ? `${median(ratios)!.toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})` : `${row.ratioToV1.toFixed(2)}×`;
    const target = row.variant.startsWith('v2-deflate') ? `≤ ${TARGET_SHARE.toFixed(2)}×: ${row.ratioToV1 <= TARGET_SHARE ? 'met' : 'missed'}` : '';
    console.log(`| ${row.title} | ${row.heartbeatS} s | ${row.connections} | ${kb(row.notifications)} | ${kb(row.reconnects)} | ${kb(row.keepalive)} | ${kb(row.tokenLifetime)} | ${kb(row.total)} | ${ratio} | ${target} | ${row.ratioToSeed.toFixed(2)}× |`);
  }
}

function reportSatellite({ emulation, rounds }: { emulation: string; rounds: SatelliteRound[] }) {
  console.log(`\n**A satellite link** (${emulation === 'relay' ? 'relay emulation' : 'netem'}: 600 ms one way, 1 % loss, 512 kbit/s), ${rounds.length} rounds\n`);
  console.log(`| Transport | Publish (202) → receipt: median | p95 | max | n | Cut of ${settings.satCutS} s, each round, from the link's return: noticed | open again | first notification of the cut received | Reconnection (noticed → open) |`);
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const variant of SATELLITE_VARIANTS) {
    const times = rounds
      .flatMap((round) => round.deliveries)
      .filter((delivery) => delivery.variant === variant.id && delivery.receivedAt !== undefined)
      .map((delivery) => delivery.receivedAt! - delivery.acceptedAt)
      .sort((a, b) => a - b);
    const missing = rounds.flatMap((round) => round.deliveries).filter((delivery) => delivery.variant === variant.id && delivery.receivedAt === undefined).length;
    const cuts = rounds.map((round) => round.cut.find((result) => result.variant === variant.id)!);
    const list = (get: (cut: CutResult) => number | undefined) => `${cuts.map((cut) => (get(cut) === undefined ? '—' : `${(get(cut)! / 1000).toFixed(1)}`)).join(' / ')} s`;
    const reconnection = (cut: CutResult) => (cut.reopenedMs === undefined || cut.noticedMs === undefined ? undefined : cut.reopenedMs - cut.noticedMs);
    console.log(
      `| ${variant.title} | ${Math.round(median(times) ?? Number.NaN)} ms | ${Math.round(percentile(times, 95) ?? Number.NaN)} ms | ${Math.round(times.at(-1) ?? Number.NaN)} ms | ${times.length}${missing ? ` (${missing} not received)` : ''} | ${list((cut) => cut.noticedMs)} | ${list((cut) => cut.reopenedMs)} | ${list((cut) => cut.receivedMs)} | ${list(reconnection)} |`,
    );
  }
  console.log(`\nLosses emulated per round: ${rounds.map((round) => round.lossesEmulated).join(', ')}.`);
}

// ------------------------------------------------------------------ entry

const seedShape = JSON.stringify(pushedMessage(validNotification('x'))).length;
progress(`a notification of the seed's shape: ${seedShape} bytes of JSON`);
const results: Record<string, unknown> = { machine: machine(), settings, seedShapeBytes: seedShape };
if (settings.only.includes('bytes')) {
  const runs = await bytesScenario();
  results.bytes = { tokenChars, runs, days: runs.map(days) };
  progress(`an access token: ${tokenChars} characters`);
  reportBytes(runs);
}
if (settings.only.includes('satellite')) {
  if (process.getuid?.() !== 0) {
    // The link makes a network namespace and sets qdiscs.
    progress('satellite: skipped, it needs root');
    results.satellite = { skipped: 'needs root' };
  } else {
    const satellite = await satelliteScenario();
    results.satellite = satellite;
    reportSatellite(satellite);
  }
}
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
const file = join(ROOT, `bench/results/ships-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(file, JSON.stringify(results, null, 2));
console.log(`\n${file}`);
