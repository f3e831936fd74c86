/**
 * Load generator of bench/websocket.ts, started pinned to CPU 1 as `node --import tsx bench/lib/ws-load.ts`.
 * Prints one JSON line on stdout; every phase is time-bounded and every socket is closed before exit.
 *
 *   --mode idle   --url WS --auth A --server-pid P --steps 1000,5000 [--settle 3] [--procs 2] [--id-query] [--count-url URL]
 *       Holds connections in --procs child processes (the fd limit is per process), growing through
 *       --steps; after each step and --settle seconds reads the server's VmRSS from /proc.
 *   --mode push   --fixtures F.json --server-pid P --rate R [--duration 10] [--warmup 2] [--inflight 256] [--drain 10]
 *       Our service only: stream connections from the fixtures, an open-loop HTTP publisher at R/s
 *       (at most --inflight requests in flight), latency from publish request sent to message received.
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
import { benchNotification, cpuSeconds, mb, now, percentile, type PushFixtures, round, sleep, STREAM_PATH, vmRss } from './ws-common.js';

const { values: opt } = parseArgs({
  options: {
    mode: { type: 'string', default: 'idle' },
    url: { type: 'string' },
    auth: { type: 'string' },
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
    count: { type: 'string', default: '1000' },
    'warmup-auth': { type: 'string' },
    'warmup-count': { type: 'string', default: '0' },
    'max-runtime': { type: 'string', default: '600' },
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

/** Connections of one process; counts the ones the server closed (e.g. 1008 at capacity). */
class SocketPool {
  private readonly sockets = new Set<WebSocket>();
  private closing = false;
  readonly closedByServer: Record<string, number> = {};

  constructor(
    private readonly url: string,
    private readonly auth: string,
    private readonly idQuery: boolean,
  ) {}

  get held() {
    return this.sockets.size;
  }

  /** Opens `count` connections, `concurrency` handshakes at a time; ids from `firstId` (the anchor keys clients by ?id=). */
  async open(count: number, firstId: number, concurrency: number): Promise<OpenResult> {
    const result: OpenResult = { open: 0, failed: 0, errors: {} };
    let next = 0;
    const one = (id: number) =>
      new Promise<void>((resolve) => {
        const url = this.idQuery ? `${this.url}?id=${id}` : this.url;
        const socket = new WebSocket(url, { headers: { authorization: this.auth }, perMessageDeflate: false, handshakeTimeout: 15_000 });
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

  constructor(url: string, auth: string, idQuery: boolean) {
    this.child = fork(fileURLToPath(import.meta.url), ['--child', '--max-runtime', opt['max-runtime']!], { serialization: 'advanced' });
    this.child.on('message', ({ id, data }: { id: number; data: unknown }) => {
      this.pending.get(id)?.(data);
      this.pending.delete(id);
    });
    void this.call('init', { url, auth, idQuery });
  }

  call<T>(cmd: string, args: Record<string, unknown> = {}): Promise<T> {
    const id = this.seq++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve as (data: unknown) => void);
      this.child.send({ id, cmd, ...args });
    });
  }

  open = (count: number, firstId: number, concurrency: number) => this.call<OpenResult>('open', { count, firstId, concurrency });
  status = () => this.call<{ held: number; closedByServer: Record<string, number> }>('status');
  close = () => this.call<boolean>('close');
}

function serveChild() {
  let pool: SocketPool;
  process.on('message', async (message: { id: number; cmd: string; [key: string]: unknown }) => {
    const reply = (data: unknown) => process.send!({ id: message.id, data });
    switch (message.cmd) {
      case 'init':
        pool = new SocketPool(message.url as string, message.auth as string, message.idQuery as boolean);
        return reply(true);
      case 'open':
        return reply(await pool.open(message.count as number, message.firstId as number, message.concurrency as number));
      case 'status':
        return reply({ held: pool.held, closedByServer: pool.closedByServer });
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
  const pools = Array.from({ length: procs }, () => new RemotePool(opt.url!, opt.auth!, opt['id-query']!));
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
    const warm = new RemotePool(opt.url!, opt.auth!, opt['id-query']!);
    await warm.open(100, 1_000_000, 32);
    await warm.close();
    await sleep(settleMs);
    const before = vmRss(SERVER_PID);
    const started = now();
    const rows = [];
    for (const step of steps) {
      const stepStart = now();
      const { failed, errors } = await openMore(step - (await held()));
      const connectS = (now() - stepStart) / 1000;
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
      });
    }
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
    };
  } finally {
    await Promise.all(pools.map((pool) => pool.close()));
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

async function push() {
  const fixtures = JSON.parse(readFileSync(opt.fixtures!, 'utf8')) as PushFixtures;
  const rate = Number(opt.rate);
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
  const streamUrl = `${fixtures.base.replace(/^http/, 'ws')}${STREAM_PATH}`;
  const sockets = await openStreams(streamUrl, fixtures, onMessage);
  const publisher = new Publisher(fixtures.base, fixtures.publishToken, inflightCap);
  try {
    const t0 = now() + 100;
    window = [t0 + Number(opt.warmup) * 1000, t0 + (Number(opt.warmup) + Number(opt.duration)) * 1000];
    const cpu0 = { at: 0, server: 0, self: process.cpuUsage() };
    const lags: number[] = [];
    let seq = 0;
    let sentInWindow = 0;
    let acceptedInWindow = 0;
    const statuses: Record<string, number> = {};

    let stopped = false;
    /** Sends what is due (open loop), as long as fewer than --inflight requests are outstanding; nothing after the window. */
    const sendDue = () => {
      const t = now();
      if (stopped || t >= window[1]) return;
      const due = Math.floor(((t - t0) * rate) / 1000);
      while (seq < due && publisher.inflight < inflightCap) {
        const scheduled = t0 + (seq * 1000) / rate;
        const subscriber = fixtures.subscribers[seq % fixtures.subscribers.length];
        seq++;
        const correlationId = randomUUID();
        const sentAt = now();
        const inWindow = sentAt >= window[0] && sentAt < window[1];
        if (inWindow) {
          sentInWindow++;
          lags.push(sentAt - scheduled);
        }
        const entry: Published = { sentAt, inWindow, expected: 0, received: 0 };
        published.set(correlationId, entry);
        void publisher.publish(subscriber.clientId, correlationId).then((status) => {
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (status === 202) {
            entry.expected = fixtures.connsPerSubscriber;
            if (inWindow) acceptedInWindow++;
          }
          sendDue();
        });
      }
    };
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        const t = now();
        if (!cpu0.at && t >= window[0]) Object.assign(cpu0, { at: t, server: cpuSeconds(SERVER_PID), self: process.cpuUsage() });
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
    const selfCpu = process.cpuUsage(cpu0.self);
    const loadgenCpuPct = ((selfCpu.user + selfCpu.system) / 1e6 / windowS) * 100;

    // Every 202'd notification must arrive on each of its recipient's connections.
    const drainStart = now();
    await until(() => publisher.inflight === 0, Number(opt.drain) * 1000);
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
      subscribers: fixtures.subscribers.length,
      rate_target: rate,
      inflight_cap: inflightCap,
      duration_s: Number(opt.duration),
      warmup_s: Number(opt.warmup),
      published_in_window: sentInWindow,
      publish_rate_achieved: Math.round(sentInWindow / windowS),
      // Due by the end of the window but never sent: the in-flight cap held them back.
      unsent_at_end: Math.floor(((window[1] - t0) * rate) / 1000) - seq,
      accepted_in_window: acceptedInWindow,
      publish_statuses: statuses,
      delivered_msgs_per_s: Math.round(deliveredInWindow / windowS),
      expected_total: expected(),
      received_total: received(),
      lost: expected() - received(),
      duplicates: entries.reduce((sum, e) => sum + (e.expected > 0 ? Math.max(0, e.received - e.expected) : 0), 0),
      // Pushed although the publish was not answered 202 (e.g. a timeout after the commit).
      pushed_without_202: entries.reduce((sum, e) => sum + (e.expected === 0 ? e.received : 0), 0),
      unknown_messages: unknownMessages,
      drain_ms: Math.round(drainMs),
      latency_ms: latencySummary(sorted),
      publisher_lag_ms: { p99: round(percentile(lags, 99) ?? Number.NaN, 1), max: round(lags.at(-1) ?? Number.NaN, 1) },
      // The service's node process only; its PostgreSQL is in database_cpu_pct_of_core (whole run).
      server_cpu_pct_of_core: round(serverCpuPct, 1),
      loadgen_cpu_pct_of_core: round(loadgenCpuPct, 1),
      server_rss_mb: mb(vmRss(SERVER_PID)),
    };
  } finally {
    publisher.close();
    for (const socket of sockets) socket.terminate();
  }
}

async function openStreams(url: string, fixtures: PushFixtures, onMessage: (data: WebSocket.RawData) => void): Promise<WebSocket[]> {
  const tokens = fixtures.subscribers.flatMap((subscriber) => Array.from({ length: fixtures.connsPerSubscriber }, () => subscriber.token));
  const sockets: WebSocket[] = [];
  let next = 0;
  const lanes = Array.from({ length: Math.min(Number(opt.concurrency), tokens.length) }, async () => {
    while (next < tokens.length) {
      const token = tokens[next++];
      sockets.push(
        await new Promise<WebSocket>((resolve, reject) => {
          const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false, handshakeTimeout: 15_000 });
          socket.once('open', () => resolve(socket));
          socket.once('error', reject);
          socket.on('message', onMessage);
        }),
      );
    }
  });
  await Promise.all(lanes);
  return sockets;
}

/** POST /voyage/notification/v1/notifications over keep-alive connections (node:http: cheaper per request than fetch). */
class Publisher {
  inflight = 0;
  private readonly agent: http.Agent;
  private readonly url: URL;

  constructor(
    base: string,
    private readonly token: string,
    maxSockets: number,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets });
    this.url = new URL('/voyage/notification/v1/notifications', base);
  }

  /** Resolves with the HTTP status (0 for a transport error). */
  publish(recipient: string, correlationId: string): Promise<number> {
    const body = JSON.stringify({ recipient, ...benchNotification(correlationId, 'bench') });
    this.inflight++;
    return new Promise((resolve) => {
      const done = (status: number) => {
        this.inflight--;
        resolve(status);
      };
      const request = http.request(
        this.url,
        { agent: this.agent, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: `Bearer ${this.token}` } },
        (response) => {
          response.resume();
          response.on('end', () => done(response.statusCode ?? 0));
          response.on('error', () => done(0));
        },
      );
      request.on('error', () => done(0));
      request.end(body);
    });
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
  console.log(JSON.stringify(await run()));
  process.exit(0);
}

if (opt.child) serveChild();
else await main();
