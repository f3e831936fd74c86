/**
 * Load generator of bench/websocket.ts, started pinned to CPU 1 as `node --import tsx bench/lib/ws-load.ts`.
 * Prints one JSON line on stdout; every phase is time-bounded and every socket is closed before exit.
 *
 *   --mode idle   --url WS (--auth A | --auth-file F.json) --server-pid P --steps 1000,5000 [--settle 3] [--procs 2] [--id-query] [--count-url URL]
 *       (--auth-file: a JSON array of Authorization values; connection n uses value n mod its length)
 *       [--deflate --publish-file F.json [--byte-rounds 3]]
 *       Holds connections in --procs child processes (the fd limit is per process), growing through
 *       --steps; after each step and --settle seconds reads the server's VmRSS from /proc.
 *       --deflate: the connections offer permessage-deflate. --publish-file ({base, publishToken,
 *       clientIds}): after the warm-up and after each step, one notification is published to each
 *       client, and every connection held must have received one before the settle (so each has
 *       compressed at least once); the bytes read on the connections meanwhile, per message, are
 *       its size on the wire (frame and the delivery ping included). After the last reading,
 *       --byte-rounds more such rounds measure the messages that follow a first one.
 *   --mode push   --fixtures F.json --server-pid P --rate R [--duration 10] [--warmup 2] [--inflight 256] [--drain 10]
 *                 [--batch 1] [--server-pids P2,P3] [--pg-url URL --pg-pid PM] [--deflate]
 *       Our service only: stream connections from the fixtures, an open-loop HTTP publisher at R/s
 *       (at most --inflight requests in flight), latency from publish request sent to message received.
 *       --batch N > 1: one request to the batch route every N due notifications, each element to the
 *       next subscriber; an element counts as accepted when the request was 202 and its result has an id.
 *       Fixtures with `bases` (a fleet): connections and requests round-robin over the instances;
 *       --server-pids adds the other instances to the node CPU figure; --pg-url/--pg-pid measure the
 *       shared PostgreSQL in the window (bench/lib/pg-stats.ts; needs pg_stat_statements).
 *       --deflate: the connections offer permessage-deflate (the service compresses what it pushes).
 *   --mode replay --url WS --auth A --count N --server-pid P [--warmup-auth A2 --warmup-count M]
 *       One connection whose client has N stored notifications: time until all arrived, server RSS sampled.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { PG_STATS_METHOD, PgStats } from './pg-stats.js';
import { benchNotification, cpuSeconds, mb, now, percentile, type PushFixtures, round, sleep, STREAM_PATH, vmRss } from './ws-common.js';

const { values: opt } = parseArgs({
  options: {
    mode: { type: 'string', default: 'idle' },
    url: { type: 'string' },
    auth: { type: 'string' },
    'auth-file': { type: 'string' },
    'server-pid': { type: 'string' },
    steps: { type: 'string', default: '1000' },
    settle: { type: 'string', default: '3' },
    procs: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '256' },
    'id-query': { type: 'boolean', default: false },
    'count-url': { type: 'string' },
    fixtures: { type: 'string' },
    rate: { type: 'string', default: '10000' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    inflight: { type: 'string', default: '256' },
    drain: { type: 'string', default: '10' },
    batch: { type: 'string', default: '1' },
    'server-pids': { type: 'string' },
    'pg-url': { type: 'string' },
    'pg-pid': { type: 'string' },
    count: { type: 'string', default: '1000' },
    'warmup-auth': { type: 'string' },
    'warmup-count': { type: 'string', default: '0' },
    'max-runtime': { type: 'string', default: '600' },
    deflate: { type: 'boolean', default: false },
    'publish-file': { type: 'string' },
    'byte-rounds': { type: 'string', default: '3' },
    child: { type: 'boolean', default: false },
  },
});

const SERVER_PID = Number(opt['server-pid']);

// ------------------------------------------------------------------ sockets

interface OpenResult {
  open: number;
  failed: number;
  errors: Record<string, number>;
}

/** What a pool reports: connections held, closed by the server, and what they received. */
interface PoolStatus {
  held: number;
  closedByServer: Record<string, number>;
  /** Messages received by the connections held. */
  received: number;
  /** Connections held that have received no message yet. */
  unreached: number;
  /** Bytes read from the network by the connections held, since each one's upgrade. */
  bytesRead: number;
}

/** Connections of one process; counts the ones the server closed (e.g. 1008 at capacity). */
class SocketPool {
  private readonly sockets = new Set<WebSocket>();
  /** Per connection: messages received, and its TCP socket (for the bytes read). */
  private readonly traffic = new Map<WebSocket, { messages: number; wire?: import('node:net').Socket; readAtUpgrade: number }>();
  private closing = false;
  readonly closedByServer: Record<string, number> = {};

  constructor(
    private readonly url: string,
    private readonly auths: string[],
    private readonly idQuery: boolean,
    private readonly deflate = false,
  ) {}

  get held() {
    return this.sockets.size;
  }

  status(): PoolStatus {
    let received = 0;
    let unreached = 0;
    let bytesRead = 0;
    for (const socket of this.sockets) {
      const traffic = this.traffic.get(socket)!;
      received += traffic.messages;
      if (traffic.messages === 0) unreached++;
      bytesRead += (traffic.wire?.bytesRead ?? 0) - traffic.readAtUpgrade;
    }
    return { held: this.sockets.size, closedByServer: this.closedByServer, received, unreached, bytesRead };
  }

  /** Opens `count` connections, `concurrency` handshakes at a time; ids from `firstId` (the anchor keys clients by ?id=). */
  async open(count: number, firstId: number, concurrency: number): Promise<OpenResult> {
    const result: OpenResult = { open: 0, failed: 0, errors: {} };
    let next = 0;
    const one = (id: number) =>
      new Promise<void>((resolve) => {
        const url = this.idQuery ? `${this.url}?id=${id}` : this.url;
        const socket = new WebSocket(url, { headers: { authorization: this.auths[id % this.auths.length] }, perMessageDeflate: this.deflate, handshakeTimeout: 15_000 });
        const traffic: { messages: number; wire?: import('node:net').Socket; readAtUpgrade: number } = { messages: 0, readAtUpgrade: 0 };
        this.traffic.set(socket, traffic);
        socket.once('upgrade', (response) => {
          traffic.wire = response.socket as import('node:net').Socket;
          traffic.readAtUpgrade = traffic.wire.bytesRead;
        });
        socket.on('message', () => traffic.messages++);
        let settled = false;
        socket.on('open', () => {
          settled = true;
          result.open++;
          this.sockets.add(socket);
          resolve();
        });
        socket.on('error', (error: Error & { code?: string }) => {
          if (settled) return;
          settled = true;
          result.failed++;
          const key = error.code ?? error.message;
          result.errors[key] = (result.errors[key] ?? 0) + 1;
          resolve();
        });
        socket.on('close', (code) => {
          this.sockets.delete(socket);
          this.traffic.delete(socket);
          if (!this.closing && settled) this.closedByServer[code] = (this.closedByServer[code] ?? 0) + 1;
        });
      });
    const lanes = Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await one(firstId + next++);
    });
    await Promise.all(lanes);
    return result;
  }

  closeAll() {
    this.closing = true;
    for (const socket of this.sockets) socket.terminate();
    this.sockets.clear();
  }
}

/** A SocketPool in a child process (forked with this file's Node flags, so also pinned to CPU 1). */
class RemotePool {
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, (data: unknown) => void>();
  private seq = 0;

  constructor(url: string, auths: string[], idQuery: boolean, deflate = false) {
    this.child = fork(fileURLToPath(import.meta.url), ['--child', '--max-runtime', opt['max-runtime']!], { serialization: 'advanced' });
    this.child.on('message', ({ id, data }: { id: number; data: unknown }) => {
      this.pending.get(id)?.(data);
      this.pending.delete(id);
    });
    void this.call('init', { url, auths, idQuery, deflate });
  }

  call<T>(cmd: string, args: Record<string, unknown> = {}): Promise<T> {
    const id = this.seq++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve as (data: unknown) => void);
      this.child.send({ id, cmd, ...args });
    });
  }

  open = (count: number, firstId: number, concurrency: number) => this.call<OpenResult>('open', { count, firstId, concurrency });
  status = () => this.call<PoolStatus>('status');
  close = () => this.call<boolean>('close');
}

function serveChild() {
  let pool: SocketPool;
  process.on('message', async (message: { id: number; cmd: string; [key: string]: unknown }) => {
    const reply = (data: unknown) => process.send!({ id: message.id, data });
    switch (message.cmd) {
      case 'init':
        pool = new SocketPool(message.url as string, message.auths as string[], message.idQuery as boolean, message.deflate as boolean);
        return reply(true);
      case 'open':
        return reply(await pool.open(message.count as number, message.firstId as number, message.concurrency as number));
      case 'status':
        return reply(pool.status());
      case 'close':
        pool.closeAll();
        reply(true);
        setTimeout(() => process.exit(0), 50);
    }
  });
  process.on('disconnect', () => process.exit(0));
  setTimeout(() => process.exit(3), Number(opt['max-runtime']) * 1000).unref();
}

// ------------------------------------------------------------------ idle: RSS against connections

async function idle() {
  const steps = opt.steps!.split(',').map(Number);
  const procs = Math.max(1, Number(opt.procs));
  const concurrency = Math.max(1, Math.floor(Number(opt.concurrency) / procs));
  const settleMs = Number(opt.settle) * 1000;
  const auths = opt['auth-file'] ? (JSON.parse(readFileSync(opt['auth-file'], 'utf8')) as string[]) : [opt.auth!];
  const deflate = opt.deflate!;
  const publishing = opt['publish-file'] ? (JSON.parse(readFileSync(opt['publish-file'], 'utf8')) as IdlePublishing) : undefined;
  const pools = Array.from({ length: procs }, () => new RemotePool(opt.url!, auths, opt['id-query']!, deflate));
  let nextId = 0;
  /** Opens `total` more connections, spread evenly over the pools. */
  const openMore = async (total: number) => {
    const shares = pools.map((_, index) => Math.floor(total / procs) + (index < total % procs ? 1 : 0));
    const results = await Promise.all(
      pools.map((pool, index) => {
        const firstId = nextId;
        nextId += shares[index];
        return pool.open(shares[index], firstId, concurrency);
      }),
    );
    return { failed: results.reduce((sum, r) => sum + r.failed, 0), errors: Object.assign({}, ...results.map((r) => r.errors)) as Record<string, number> };
  };
  const held = async () => (await Promise.all(pools.map((pool) => pool.status()))).reduce((sum, s) => sum + s.held, 0);
  try {
    // Warm-up on both servers alike: the first handshakes compile code paths that then stay resident.
    const warm = new RemotePool(opt.url!, auths, opt['id-query']!, deflate);
    await warm.open(100, 1_000_000, 32);
    // With publishing, the first notifications (and compressions) too.
    if (publishing) await publishRound(publishing, [warm], 'every');
    await warm.close();
    await sleep(settleMs);
    const before = vmRss(SERVER_PID);
    const started = now();
    const rows = [];
    for (const step of steps) {
      const stepStart = now();
      const { failed, errors } = await openMore(step - (await held()));
      const connectS = (now() - stepStart) / 1000;
      const published = publishing ? await publishRound(publishing, pools, 'every') : undefined;
      await sleep(settleMs);
      const rss = vmRss(SERVER_PID);
      const conns = await held();
      rows.push({
        target: step,
        held: conns,
        failed,
        errors: Object.keys(errors).length ? errors : undefined,
        connect_s: round(connectS, 2),
        rss_mb: mb(rss),
        rss_per_conn_kb: conns ? round((rss - before) / conns / 1024, 2) : null,
        ...(published ? { unreached: published.unreached, wire_bytes_per_msg: published.wireBytesPerMessage } : {}),
      });
    }
    // The messages after a first one (what context takeover is for), once the memory was read.
    const following = [];
    if (publishing) for (let index = 0; index < Number(opt['byte-rounds']); index++) following.push(await publishRound(publishing, pools, 'one more'));
    const statuses = await Promise.all(pools.map((pool) => pool.status()));
    const closedByServer: Record<string, number> = {};
    for (const status of statuses) for (const [code, n] of Object.entries(status.closedByServer)) closedByServer[code] = (closedByServer[code] ?? 0) + n;
    return {
      mode: 'idle',
      rss_before_mb: mb(before),
      steps: rows,
      server_seen: await serverSeen(),
      closed_by_server: Object.keys(closedByServer).length ? closedByServer : undefined,
      total_s: round((now() - started) / 1000, 1),
      loadgen_procs: procs,
      deflate,
      negotiated: publishing ? await negotiated(opt.url!, auths[0], deflate) : undefined,
      ...(following.length
        ? { following_wire_bytes_per_msg: round(following.reduce((sum, r) => sum + r.bytes, 0) / Math.max(1, following.reduce((sum, r) => sum + r.messages, 0)), 1) }
        : {}),
    };
  } finally {
    await Promise.all(pools.map((pool) => pool.close()));
  }
}

/** What --publish-file holds: where to publish, with what, and to whom (the clients of the connections). */
interface IdlePublishing {
  base: string;
  publishToken: string;
  clientIds: string[];
}

/**
 * Publishes one notification to each client (16 requests at a time), then waits (at most 60 s)
 * until `every` connection held has received a message, or each has received `one more` on
 * average; returns the bytes and messages the connections read meanwhile.
 */
async function publishRound(publishing: IdlePublishing, pools: RemotePool[], until: 'every' | 'one more') {
  const totals = async () => {
    const statuses = await Promise.all(pools.map((pool) => pool.status()));
    return statuses.reduce((sum, s) => ({ held: sum.held + s.held, received: sum.received + s.received, unreached: sum.unreached + s.unreached, bytesRead: sum.bytesRead + s.bytesRead }), {
      held: 0,
      received: 0,
      unreached: 0,
      bytesRead: 0,
    });
  };
  const start = await totals();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < publishing.clientIds.length) {
        const recipient = publishing.clientIds[next++];
        const response = await fetch(`${publishing.base}/voyage/notification/v1/notifications`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${publishing.publishToken}` },
          body: JSON.stringify({ recipient, ...benchNotification(randomUUID(), 'RouteConfigurationService') }),
        });
        if (response.status !== 202) throw new Error(`publish answered ${response.status}: ${await response.text()}`);
      }
    }),
  );
  const deadline = now() + 60_000;
  let current = await totals();
  const done = () => (until === 'every' ? current.unreached === 0 : current.received >= start.received + current.held);
  while (!done() && now() < deadline) {
    await sleep(100);
    current = await totals();
  }
  // The delivery ping that follows each message comes a moment later: its bytes count too.
  await sleep(200);
  current = await totals();
  const messages = current.received - start.received;
  const bytes = current.bytesRead - start.bytesRead;
  return { unreached: current.unreached, messages, bytes, wireBytesPerMessage: messages ? round(bytes / messages, 1) : null };
}

/** The Sec-WebSocket-Extensions the server answers a connection like the measured ones with. */
async function negotiated(url: string, auth: string, deflate: boolean): Promise<string | null> {
  const socket = new WebSocket(url, { headers: { authorization: auth }, perMessageDeflate: deflate, handshakeTimeout: 15_000 });
  try {
    return await new Promise<string | null>((resolve, reject) => {
      socket.once('upgrade', (response) => resolve((response.headers['sec-websocket-extensions'] as string | undefined) ?? null));
      socket.once('error', reject);
    });
  } finally {
    socket.terminate();
  }
}

/** Connections the server itself counts (our /metrics gauge or the anchor's /stats), read after the last RSS reading. */
async function serverSeen(): Promise<number | null> {
  if (!opt['count-url']) return null;
  try {
    const text = await (await fetch(opt['count-url'])).text();
    const gauge = /^ws_connections_open(?:\{[^}]*\})? (\d+)/m.exec(text);
    return gauge ? Number(gauge[1]) : ((JSON.parse(text) as { clients?: number }).clients ?? null);
  } catch {
    return null;
  }
}

// ------------------------------------------------------------------ push: HTTP publish -> stored -> pushed

interface Published {
  sentAt: number;
  inWindow: boolean;
  expected: number;
  received: number;
}

/** One element of a publish request: to whom, and the id the pushed message is recognised by. */
interface Element {
  recipient: string;
  correlationId: string;
  entry: Published;
}

async function push() {
  const fixtures = JSON.parse(readFileSync(opt.fixtures!, 'utf8')) as PushFixtures;
  const bases = fixtures.bases ?? [fixtures.base];
  const rate = Number(opt.rate);
  const batch = Math.max(1, Number(opt.batch));
  const inflightCap = Number(opt.inflight);
  const published = new Map<string, Published>();
  const latencies: number[] = [];
  let window: [number, number] = [Infinity, -Infinity];
  let deliveredInWindow = 0;
  let unknownMessages = 0;

  const onMessage = (data: WebSocket.RawData) => {
    const received = now();
    const entry = published.get((JSON.parse(data.toString()) as { correlationId: string }).correlationId);
    if (!entry) return void unknownMessages++;
    entry.received++;
    if (received >= window[0] && received < window[1]) deliveredInWindow++;
    if (entry.inWindow) latencies.push(received - entry.sentAt);
  };
  const { sockets, retried } = await openStreams(bases, fixtures, onMessage);
  const publishers = new Publishers(bases, fixtures.publishToken, inflightCap, batch);
  const pgStats = opt['pg-url'] ? new PgStats(opt['pg-url'], Number(opt['pg-pid'])) : undefined;
  await pgStats?.connect();
  const serverPids = [SERVER_PID, ...(opt['server-pids'] ? opt['server-pids'].split(',').map(Number) : [])];
  const serversCpu = () => serverPids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  try {
    const t0 = now() + 100;
    window = [t0 + Number(opt.warmup) * 1000, t0 + (Number(opt.warmup) + Number(opt.duration)) * 1000];
    const cpu0 = { at: 0, server: 0, servers: 0, self: process.cpuUsage() };
    const lags: number[] = [];
    let seq = 0;
    let sentInWindow = 0;
    let requestsInWindow = 0;
    let acceptedInWindow = 0;
    const statuses: Record<string, number> = {};
    const elementOutcomes = { accepted: 0, refused: 0, unanswered: 0 };

    let stopped = false;
    /**
     * Sends what is due (open loop), a request per --batch due notifications, as long as fewer
     * than --inflight requests are outstanding; nothing after the window.
     */
    const sendDue = () => {
      const t = now();
      if (stopped || t >= window[1]) return;
      const due = Math.floor(((t - t0) * rate) / 1000);
      while (due - seq >= batch && publishers.inflight < inflightCap) {
        // A request is due when its last element is.
        const scheduled = t0 + ((seq + batch - 1) * 1000) / rate;
        const sentAt = now();
        const inWindow = sentAt >= window[0] && sentAt < window[1];
        const elements: Element[] = [];
        for (let index = 0; index < batch; index++) {
          const subscriber = fixtures.subscribers[seq % fixtures.subscribers.length];
          seq++;
          const entry: Published = { sentAt, inWindow, expected: 0, received: 0 };
          const correlationId = randomUUID();
          published.set(correlationId, entry);
          elements.push({ recipient: subscriber.clientId, correlationId, entry });
        }
        if (inWindow) {
          sentInWindow += batch;
          requestsInWindow++;
          lags.push(sentAt - scheduled);
        }
        void publishers.next().publish(elements).then(({ status, accepted }) => {
          statuses[status] = (statuses[status] ?? 0) + 1;
          elements.forEach((element, index) => {
            if (accepted[index] === undefined) elementOutcomes.unanswered++;
            else if (accepted[index]) elementOutcomes.accepted++;
            else elementOutcomes.refused++;
            if (!accepted[index]) return;
            element.entry.expected = fixtures.connsPerSubscriber;
            if (inWindow) acceptedInWindow++;
          });
          sendDue();
        });
      }
    };
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        const t = now();
        if (!cpu0.at && t >= window[0]) {
          Object.assign(cpu0, { at: t, server: cpuSeconds(SERVER_PID), servers: serversCpu(), self: process.cpuUsage() });
          void pgStats?.begin();
        }
        if (t >= window[1]) {
          stopped = true;
          clearInterval(timer);
          resolve();
          return;
        }
        if (t >= t0) sendDue();
      }, 1);
    });
    const windowS = (now() - cpu0.at) / 1000;
    const serverCpuPct = ((cpuSeconds(SERVER_PID) - cpu0.server) / windowS) * 100;
    const serversCpuPct = ((serversCpu() - cpu0.servers) / windowS) * 100;
    const selfCpu = process.cpuUsage(cpu0.self);
    const loadgenCpuPct = ((selfCpu.user + selfCpu.system) / 1e6 / windowS) * 100;
    const database = pgStats ? { ...(await pgStats.end()), method: PG_STATS_METHOD } : undefined;

    // Every accepted notification must arrive on each of its recipient's connections.
    const drainStart = now();
    await until(() => publishers.inflight === 0, Number(opt.drain) * 1000);
    const expected = () => [...published.values()].reduce((sum, e) => sum + e.expected, 0);
    const received = () => [...published.values()].reduce((sum, e) => sum + Math.min(e.received, e.expected), 0);
    await until(() => received() >= expected(), Number(opt.drain) * 1000);
    const drainMs = now() - drainStart;

    const entries = [...published.values()];
    const sorted = Float64Array.from(latencies).sort();
    lags.sort((a, b) => a - b);
    return {
      mode: 'push',
      connections: sockets.length,
      // Handshakes refused and tried again, by error.
      connection_retries: Object.keys(retried).length ? retried : undefined,
      subscribers: fixtures.subscribers.length,
      instances: bases.length,
      batch_size: batch,
      route: batch > 1 ? 'batch' : 'single',
      rate_target: rate,
      inflight_cap: inflightCap,
      duration_s: Number(opt.duration),
      warmup_s: Number(opt.warmup),
      published_in_window: sentInWindow,
      publish_rate_achieved: Math.round(sentInWindow / windowS),
      requests_per_s: Math.round(requestsInWindow / windowS),
      // Due by the end of the window but never sent: the in-flight cap held them back (or, batched, less than one request's worth).
      unsent_at_end: Math.floor(((window[1] - t0) * rate) / 1000) - seq,
      accepted_in_window: acceptedInWindow,
      publish_statuses: statuses,
      // Per notification: accepted (202 and an id), refused (an element's 400, or the request's non-202), unanswered (a batch answer without it).
      element_outcomes: batch > 1 ? elementOutcomes : undefined,
      delivered_msgs_per_s: Math.round(deliveredInWindow / windowS),
      expected_total: expected(),
      received_total: received(),
      lost: expected() - received(),
      duplicates: entries.reduce((sum, e) => sum + (e.expected > 0 ? Math.max(0, e.received - e.expected) : 0), 0),
      // Pushed although the publish was not accepted (e.g. a timeout after the commit).
      pushed_without_202: entries.reduce((sum, e) => sum + (e.expected === 0 ? e.received : 0), 0),
      unknown_messages: unknownMessages,
      drain_ms: Math.round(drainMs),
      // From the request's sending (not from when the notification fell due, which batching delays by up to batch/rate).
      latency_ms: latencySummary(sorted),
      publisher_lag_ms: { p99: round(percentile(lags, 99) ?? Number.NaN, 1), max: round(lags.at(-1) ?? Number.NaN, 1) },
      // The service's node process only (the first instance of a fleet); its PostgreSQL is in database_cpu_pct_of_core (whole run).
      server_cpu_pct_of_core: round(serverCpuPct, 1),
      // Every node instance (of a fleet: all of them together), in the window.
      servers_cpu_pct_of_core: round(serversCpuPct, 1),
      loadgen_cpu_pct_of_core: round(loadgenCpuPct, 1),
      server_rss_mb: mb(vmRss(SERVER_PID)),
      database,
    };
  } finally {
    await pgStats?.close();
    publishers.close();
    for (const socket of sockets) socket.terminate();
  }
}

/**
 * The fixtures' connections, connection i to instance i mod n (a fleet's subscribers spread
 * round-robin). A refused handshake (a 503 while a fresh instance's pool is busy) is tried again
 * after a second, as a client honouring Retry-After would, up to OPEN_ATTEMPTS times.
 */
async function openStreams(bases: string[], fixtures: PushFixtures, onMessage: (data: WebSocket.RawData) => void) {
  const urls = bases.map((base) => `${base.replace(/^http/, 'ws')}${STREAM_PATH}`);
  const tokens = fixtures.subscribers.flatMap((subscriber) => Array.from({ length: fixtures.connsPerSubscriber }, () => subscriber.token));
  const sockets: WebSocket[] = [];
  const retried: Record<string, number> = {};
  const open = (index: number) =>
    new Promise<WebSocket>((resolve, reject) => {
      const socket = new WebSocket(urls[index % urls.length], { headers: { authorization: `Bearer ${tokens[index]}` }, perMessageDeflate: opt.deflate!, handshakeTimeout: 15_000 });
      socket.once('open', () => resolve(socket));
      // Also after the open: an error then must not end the process; a lost push shows as lost.
      socket.on('error', reject);
      socket.on('message', onMessage);
    });
  let next = 0;
  const lanes = Array.from({ length: Math.min(Number(opt.concurrency), tokens.length) }, async () => {
    while (next < tokens.length) {
      const index = next++;
      for (let attempt = 1; ; attempt++) {
        try {
          sockets.push(await open(index));
          break;
        } catch (error) {
          if (attempt >= OPEN_ATTEMPTS) throw new Error(`connection ${index} to ${urls[index % urls.length]}: ${(error as Error).message} (${attempt} attempts)`);
          retried[(error as Error).message] = (retried[(error as Error).message] ?? 0) + 1;
          await sleep(1000);
        }
      }
    }
  });
  await Promise.all(lanes);
  return { sockets, retried };
}

const OPEN_ATTEMPTS = 5;

/** A Publisher per instance, taken round-robin; the in-flight cap counts requests over all of them. */
class Publishers {
  private readonly list: Publisher[];
  private turn = 0;

  constructor(bases: string[], token: string, maxSockets: number, batch: number) {
    this.list = bases.map((base) => new Publisher(base, token, Math.ceil(maxSockets / bases.length), batch > 1));
  }

  get inflight() {
    return this.list.reduce((sum, publisher) => sum + publisher.inflight, 0);
  }

  next = () => this.list[this.turn++ % this.list.length];
  close = () => this.list.forEach((publisher) => publisher.close());
}

/**
 * POST /voyage/notification/v1/notifications (one element) or …/batch (an array) over keep-alive
 * connections (node:http: cheaper per request than fetch).
 */
class Publisher {
  inflight = 0;
  private readonly agent: http.Agent;
  private readonly url: URL;

  constructor(
    base: string,
    private readonly token: string,
    maxSockets: number,
    private readonly batched: boolean,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets });
    this.url = new URL(`/voyage/notification/v1/notifications${batched ? '/batch' : ''}`, base);
  }

  /**
   * Resolves with the HTTP status (0 for a transport error) and, per element, whether it was
   * accepted: the single route's 202, or the batch's 202 with an `id` in the element's result
   * (undefined where the batch answer has no result for it).
   */
  publish(elements: Element[]): Promise<{ status: number; accepted: (boolean | undefined)[] }> {
    const bodies = elements.map(({ recipient, correlationId }) => ({ recipient, ...benchNotification(correlationId, 'bench') }));
    const body = JSON.stringify(this.batched ? bodies : bodies[0]);
    this.inflight++;
    return new Promise((resolve) => {
      const done = (status: number, text: string) => {
        this.inflight--;
        resolve({ status, accepted: this.accepted(status, text, elements.length) });
      };
      const request = http.request(
        this.url,
        { agent: this.agent, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: `Bearer ${this.token}` } },
        (response) => {
          // The single route's answer is not needed; the batch's says which elements were stored.
          let text = '';
          if (this.batched) response.on('data', (chunk: Buffer) => (text += chunk));
          else response.resume();
          response.on('end', () => done(response.statusCode ?? 0, text));
          response.on('error', () => done(0, ''));
        },
      );
      request.on('error', () => done(0, ''));
      request.end(body);
    });
  }

  private accepted(status: number, text: string, count: number): (boolean | undefined)[] {
    if (status !== 202) return Array.from({ length: count }, () => false);
    if (!this.batched) return [true];
    try {
      const { results } = JSON.parse(text) as { results: { id?: string }[] };
      return Array.from({ length: count }, (_, index) => (results[index] === undefined ? undefined : typeof results[index].id === 'string'));
    } catch {
      return Array.from({ length: count }, () => undefined);
    }
  }

  close() {
    this.agent.destroy();
  }
}

// ------------------------------------------------------------------ replay: a stored backlog pushed on connect

async function replay() {
  const count = Number(opt.count);
  const url = opt.url!;
  // Warm-up with another client's small backlog: the replay path is compiled before the measured one.
  if (opt['warmup-auth'] && Number(opt['warmup-count']) > 0) {
    await receiveBacklog(url, opt['warmup-auth'], Number(opt['warmup-count']), () => {});
    await sleep(1000);
  }
  const before = vmRss(SERVER_PID);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, vmRss(SERVER_PID))), 20);
  const cpu0 = cpuSeconds(SERVER_PID);
  try {
    const result = await receiveBacklog(url, opt.auth!, count, (rss) => (peak = Math.max(peak, rss)));
    const serverCpu = cpuSeconds(SERVER_PID) - cpu0;
    await sleep(1000);
    const after = vmRss(SERVER_PID);
    const totalS = result.doneMs / 1000;
    return {
      mode: 'replay',
      count,
      ...result.check,
      open_ms: round(result.openMs, 1),
      first_message_ms: round(result.firstMs, 1),
      total_ms: round(result.doneMs, 1),
      msgs_per_s: result.check.received === count ? Math.round(count / totalS) : null,
      us_per_msg: round((result.doneMs * 1000) / count, 1),
      server_cpu_s: round(serverCpu, 2),
      rss_before_mb: mb(before),
      rss_peak_mb: mb(peak),
      rss_after_mb: mb(after),
      rss_growth_mb: mb(peak - before),
      rss_growth_kb_per_msg: round((peak - before) / count / 1024, 3),
    };
  } finally {
    clearInterval(sampler);
  }
}

/**
 * Connects and waits for `count` messages (bounded): times from the connect call; checks that the
 * fixtures' `origin: "replay-<i>"` arrive once each and in publish order.
 */
async function receiveBacklog(url: string, auth: string, count: number, onRss: (rss: number) => void) {
  const started = now();
  let openMs = Number.NaN;
  let firstMs = Number.NaN;
  let doneMs = Number.NaN;
  let received = 0;
  let outOfOrder = 0;
  let duplicates = 0;
  let last = -1;
  const seen = new Uint8Array(count);
  const socket = new WebSocket(url, { headers: { authorization: auth }, perMessageDeflate: false, handshakeTimeout: 15_000 });
  try {
    await new Promise<void>((resolve, reject) => {
      const timeout = setTimeout(() => resolve(), Math.max(30_000, count * 5));
      socket.once('open', () => (openMs = now() - started));
      socket.once('error', reject);
      socket.once('close', () => resolve());
      socket.on('message', (data) => {
        if (received === 0) firstMs = now() - started;
        const index = Number((JSON.parse(data.toString()) as { origin: string }).origin.slice('replay-'.length));
        if (seen[index]) duplicates++;
        seen[index] = 1;
        if (index < last) outOfOrder++;
        last = index;
        received++;
        if (received % 1000 === 0) onRss(vmRss(SERVER_PID));
        if (received >= count) {
          doneMs = now() - started;
          clearTimeout(timeout);
          resolve();
        }
      });
    });
  } finally {
    socket.terminate();
  }
  return { openMs, firstMs, doneMs, check: { received, missing: count - seen.reduce((sum, v) => sum + v, 0), duplicates, out_of_order: outOfOrder } };
}

// ------------------------------------------------------------------ shared

function latencySummary(sorted: Float64Array) {
  const sum = sorted.reduce((a, b) => a + b, 0);
  const at = (p: number) => round(percentile(sorted, p) ?? Number.NaN, 2);
  return { samples: sorted.length, p50: at(50), p90: at(90), p99: at(99), p999: at(99.9), max: round(sorted.at(-1) ?? Number.NaN, 2), mean: round(sum / (sorted.length || 1), 2) };
}

async function until(condition: () => boolean, timeoutMs: number) {
  const deadline = now() + timeoutMs;
  while (!condition() && now() < deadline) await sleep(20);
}

async function main() {
  // A hard stop, so a stuck run never outlives the benchmark.
  setTimeout(() => {
    console.error('ws-load: max runtime reached');
    process.exit(2);
  }, Number(opt['max-runtime']) * 1000).unref();
  // And none outlives bench/websocket.ts if that one is killed.
  const parent = process.ppid;
  setInterval(() => process.ppid !== parent && process.exit(3), 1000).unref();
  const modes: Record<string, () => Promise<object>> = { idle, push, replay };
  const run = modes[opt.mode!];
  if (!run) throw new Error(`--mode must be one of ${Object.keys(modes).join(', ')}`);
  try {
    console.log(JSON.stringify(await run()));
  } catch (error) {
    // One line the harness keeps (it shows the end of stderr), rather than the end of a stack.
    console.error(`ws-load ${opt.mode}: ${(error as Error).message}`);
    process.exit(1);
  }
  process.exit(0);
}

if (opt.child) serveChild();
else await main();
