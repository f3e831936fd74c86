/**
 * The WebSocket scenarios of the benchmark suite, beside bare `ws` (../shared/anchors/baseline-ws.mjs)
 * where there is an anchor. Server (and our embedded PostgreSQL) on CPU 0, load generator on CPU 1.
 *
 *   npm run build   # once: dist/ must exist
 *   npx tsx bench/websocket.ts [--runs 3] [--only idle,compression,push,batch,replay,fleet] [--quick]
 *       [--steps 1000,5000,10000,19000] [--settle 3] [--compression-steps 2000]
 *       [--push-rates 6000,10000] [--push-conns 1000] [--push-subscribers 1000] [--push-duration 10] [--push-warmup 2] [--push-inflight 256] [--push-deflate]
 *       [--batch-size 100] [--batch-rates 20000]
 *       [--replay-counts 1000,5000,10000,20000]
 *       [--fleet-sizes 1,2,4] [--fleet-rate 20000]
 *       [--notify-conns 20] [--notify-duration 5] [--notify-listeners 0,1,4]
 *       [--clean-max 10] [--quiet-wait 60]
 *
 * --quick: one run, 1k idle connections, 3 s of push, a 1k replay, 2 s per NOTIFY probe variant
 * (a smoke test, not a result). --only notify runs the NOTIFY probe alone; fleet runs it too.
 *
 * 5 idle:   a fresh server per run; the load generator (bench/lib/ws-load.ts, 2 processes: the fd
 *           limit is per process) opens 100 connections and closes them (warm-up), waits, reads
 *           the server's VmRSS, then grows to each step, waits --settle s and reads VmRSS again.
 *           Both servers are measured the same way, without forced GC (ours has no /stats). Ours
 *           spreads the connections over clients, 100 each (the default per-client cap).
 * 5c compression: idle connections again, now offering permessage-deflate, on three fresh services
 *           per run (WS_COMPRESSION=off, on, context-takeover; their order turns with each run):
 *           after the warm-up and after each of --compression-steps, one notification (the push
 *           scenarios' shape, 374 bytes) is published to each client and every connection must
 *           have received one before the settle, so each has compressed once: the memory that
 *           counts is a connection's after a message. RSS per connection as in 5; the ratio is on
 *           (and context-takeover) over off, measured in the same run. The bytes the connections
 *           read per notification (frame and delivery ping included) are reported for the first
 *           message and, after the last reading, for three more rounds.
 * 6 push:   ours: --push-conns stream connections over --push-subscribers clients, an open-loop
 *           HTTP publisher at each rate (at most --push-inflight in flight), latency from publish
 *           request sent to message received, loss = 202'd notifications not received.
 *           --push-deflate: our connections offer permessage-deflate, so the service compresses
 *           every push (the anchor's do not: the ratio then includes the cost of compression).
 *           anchor: ws-load.mjs --mode fanout with the same connections, rate and duration.
 * 6b batch: as 6, on the same service and fixtures (when both run), but one request to the batch
 *           route per --batch-size due notifications, each element to the next subscriber; an
 *           element counts as accepted when the request was 202 and its result has an id.
 *           Latency per notification, from its request sent (batching delays a notification by
 *           up to batch/rate before that); --push-inflight counts requests. Anchor as in 6, at the
 *           same notification rate.
 * 7 replay: a fresh service per run and N; N notifications bulk-inserted for a client that never
 *           connected, then one connection; time until all N arrived in order, server RSS growth.
 * 8 fleet:  1, 2 and 4 instances (--fleet-sizes) on one PostgreSQL: the first instance starts it
 *           (its cluster prepared with pg_stat_statements preloaded, see bench/lib/pg-cluster.ts),
 *           the others get its DATABASE_URL (and DATA_DIRs of their own, which stay empty). The
 *           --push-conns connections spread round-robin over the instances and the batch publishes
 *           (--batch-size per request, --fleet-rate offered) go round-robin too, so most pushes
 *           cross instances through NOTIFY. Every instance is pinned to CPU 0 with PostgreSQL, as
 *           everything measured in this suite is: on this 2-core machine a fleet cannot add CPU,
 *           so the figure is what fanning out across instances costs, not how it scales. Reported:
 *           delivered/s, p99, lost, CPU of all node instances and of PostgreSQL in the window,
 *           PostgreSQL's exec time split (pg_stat_statements) and CPU per application_name.
 *           The instances share one public URL (API_URL, IDENTITY_URL), as behind a load
 *           balancer, so a token any of them issued is good at all; the cluster allows 200
 *           connections (four pools of 20 and their listeners come close to the default 100).
 * NOTIFY probe (bench/load/notify-probe.ts): a fresh PostgreSQL on CPU 0, no service; --notify-conns
 *           connections loop BEGIN; INSERT; NOTIFY; COMMIT (with 0, 1 and 4 listeners draining) and
 *           the same without NOTIFY: commits/s each, and the ratio.
 *
 * Ours and the anchor alternate (ours first on even runs); every measured run first waits for a
 * quiet machine, and one in which other processes used ≥ --clean-max % of a core is disturbed and
 * left out of the medians when clean runs exist. Our PostgreSQL counts as ours, not as disturbance.
 * Prints a markdown table, writes bench/results/ws-<timestamp>.json.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Snapshot } from './sysmon-types.js';
import { withDatabase } from './lib/fixtures.js';
import { ANCHORS, anchorServer, loadOnCpu1, machine, ROOT, type RunningService, startService, sysmon } from './lib/harness.js';
import { FLEET_SERVER_SETTINGS, prepareCluster, startBareDatabase } from './lib/pg-cluster.js';
import { ANCHOR_WS_AUTH, median, type PushFixtures, round, STREAM_PATH } from './lib/ws-common.js';
import { clientToken, clientTokens, cloneClients, createPublisher, createSubscriber, insertBacklog } from './lib/ws-fixtures.js';
import { LISTENER_NAME } from '../src/database/pg-listener.service.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string' },
    only: { type: 'string', default: 'idle,compression,push,batch,replay,fleet' },
    quick: { type: 'boolean', default: false },
    steps: { type: 'string' },
    settle: { type: 'string' },
    'compression-steps': { type: 'string' },
    'push-rates': { type: 'string', default: '6000,10000' },
    'push-conns': { type: 'string', default: '1000' },
    'push-subscribers': { type: 'string', default: '1000' },
    'push-duration': { type: 'string' },
    'push-warmup': { type: 'string' },
    'push-inflight': { type: 'string', default: '256' },
    'push-deflate': { type: 'boolean', default: false },
    'batch-size': { type: 'string', default: '100' },
    'batch-rates': { type: 'string', default: '20000' },
    'replay-counts': { type: 'string' },
    'fleet-sizes': { type: 'string', default: '1,2,4' },
    'fleet-rate': { type: 'string', default: '20000' },
    'notify-conns': { type: 'string', default: '20' },
    'notify-duration': { type: 'string' },
    'notify-listeners': { type: 'string', default: '0,1,4' },
    'clean-max': { type: 'string', default: '10' },
    'quiet-wait': { type: 'string' },
  },
});
const quick = values.quick!;
const numbers = (list: string) => list.split(',').map(Number);
const settings = {
  runs: Number(values.runs ?? (quick ? 1 : 3)),
  only: values.only!.split(','),
  steps: numbers(values.steps ?? (quick ? '1000' : '1000,5000,10000,19000')),
  settleS: Number(values.settle ?? (quick ? 1 : 3)),
  compressionSteps: numbers(values['compression-steps'] ?? (quick ? '500' : '2000')),
  pushRates: numbers(values['push-rates']!),
  pushConns: Number(values['push-conns']),
  pushSubscribers: Number(values['push-subscribers']),
  pushDurationS: Number(values['push-duration'] ?? (quick ? 3 : 10)),
  pushWarmupS: Number(values['push-warmup'] ?? (quick ? 1 : 2)),
  pushInflight: Number(values['push-inflight']),
  pushDeflate: values['push-deflate']!,
  batchSize: Number(values['batch-size']),
  batchRates: numbers(values['batch-rates']!),
  replayCounts: numbers(values['replay-counts'] ?? (quick ? '1000' : '1000,5000,10000,20000')),
  fleetSizes: numbers(values['fleet-sizes']!),
  fleetRate: Number(values['fleet-rate']),
  notifyConns: Number(values['notify-conns']),
  notifyDurationS: Number(values['notify-duration'] ?? (quick ? 2 : 5)),
  notifyListeners: values['notify-listeners']!,
  cleanMaxPct: Number(values['clean-max']),
  quietWaitS: Number(values['quiet-wait'] ?? (quick ? 10 : 60)),
};

/** What the load generators print, plus what this script adds about the run. */
type RunResult = Record<string, any> & { error?: string; clean?: boolean };
type Side = 'ours' | 'anchor';
type SideRuns = Record<Side, RunResult[]>;
type Monitor = Awaited<ReturnType<typeof sysmon>>;
/** WS_COMPRESSION values of scenario 5c. */
const COMPRESSION_MODES = ['off', 'on', 'context-takeover'] as const;
type CompressionMode = (typeof COMPRESSION_MODES)[number];

interface Raw {
  idle?: SideRuns;
  compression?: Record<CompressionMode, RunResult[]>;
  push?: Record<number, SideRuns>;
  batch?: Record<number, SideRuns>;
  replay?: Record<number, RunResult[]>;
  fleet?: Record<number, RunResult[]>;
  notify?: RunResult[];
}

/** The stops of everything running now, so a failure or Ctrl-C still ends it all. */
const running = new Set<() => Promise<void>>();

async function main() {
  if (!existsSync(join(ROOT, 'dist/main.js'))) throw new Error('dist/main.js is missing: run `npm run build` first');
  if (settings.pushConns % settings.pushSubscribers !== 0) throw new Error('--push-conns must be a multiple of --push-subscribers');
  const monitor = await sysmon();
  const only = (name: string) => settings.only.includes(name);
  const raw: Raw = {};
  if (only('idle')) raw.idle = await idleScenario(monitor);
  if (only('compression')) raw.compression = await compressionScenario(monitor);
  if (only('push') || only('batch')) Object.assign(raw, await pushScenario(monitor, { single: only('push'), batch: only('batch') }));
  if (only('replay')) raw.replay = await replayScenario(monitor);
  if (only('fleet')) raw.fleet = await fleetScenario(monitor);
  if (only('fleet') || only('notify')) raw.notify = await notifyScenario(monitor);
  report(raw);
}

// ------------------------------------------------------------------ scenario 5: idle connections

async function idleScenario(monitor: Monitor): Promise<SideRuns> {
  const runs: SideRuns = { ours: [], anchor: [] };
  for (let run = 0; run < settings.runs; run++) {
    for (const side of sidesFor(run)) {
      const result = side === 'ours' ? await idleOurs(monitor) : await idleAnchor(monitor);
      runs[side].push(result);
      const top = result.steps?.at(-1);
      progress('idle', side, run, result, top ? `${top.held} conns, ${top.rss_per_conn_kb} KB/conn` : undefined);
    }
  }
  return runs;
}

const idleLoad = (url: string, auth: string[], pid: number, countUrl: string) => [
  '--mode', 'idle', '--url', url, ...auth, '--server-pid', String(pid), '--count-url', countUrl,
  '--steps', settings.steps.join(','), '--settle', String(settings.settleS), '--procs', '2',
];

/** Connections per subscriber client in the idle scenario: the default per-client cap (WS_MAX_CONNECTIONS_PER_CLIENT). */
const IDLE_CONNS_PER_CLIENT = 100;

async function idleOurs(monitor: Monitor) {
  // The default WS_MAX_CONNECTIONS (10,000) would refuse the 19k step; 20,000 is the fd limit anyway.
  // Connections are spread over clients, 100 each, as the per-client cap allows: a device fleet, not
  // one client holding thousands (whose every wake-up walks all its connections).
  return withServer(startService({ WS_MAX_CONNECTIONS: '20000' }), async (service) => {
    const template = await createSubscriber(service);
    const subscribers = [template, ...(await cloneClients(service, template, Math.ceil(Math.max(...settings.steps) / IDLE_CONNS_PER_CLIENT) - 1))];
    const folder = mkdtempSync(join(tmpdir(), 'ws-bench-'));
    try {
      const authFile = join(folder, 'auths.json');
      writeFileSync(authFile, JSON.stringify((await clientTokens(service.base, subscribers)).map((token) => `Bearer ${token}`)));
      return await measured(monitor, ourLoad(idleLoad(wsUrl(service.base, STREAM_PATH), ['--auth-file', authFile], service.pid, `${service.base}/metrics`)), ROOT, service);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
}

async function idleAnchor(monitor: Monitor) {
  return withServer(anchorServer(['baseline-ws.mjs']), (anchor) =>
    // The anchor keys its clients by ?id=, so each connection gets its own.
    measured(monitor, ourLoad([...idleLoad(wsUrl(anchor.url, '/ws'), ['--auth', ANCHOR_WS_AUTH], anchor.pid, `${anchor.url}/stats`), '--id-query']), ROOT),
  );
}

// ------------------------------------------------------------------ scenario 5c: idle connections after a compressed message

async function compressionScenario(monitor: Monitor): Promise<Record<CompressionMode, RunResult[]>> {
  const byMode = Object.fromEntries(COMPRESSION_MODES.map((mode) => [mode, []])) as unknown as Record<CompressionMode, RunResult[]>;
  for (let run = 0; run < settings.runs; run++) {
    // Each mode goes first in turn, so drift on the machine hits all alike.
    const order = COMPRESSION_MODES.map((_, index) => COMPRESSION_MODES[(index + run) % COMPRESSION_MODES.length]);
    for (const mode of order) {
      const result = await idleCompressed(monitor, mode);
      byMode[mode].push(result);
      const top = result.steps?.at(-1);
      progress(`idle, WS_COMPRESSION=${mode}`, 'ours', run, result, top ? `${top.held} conns, ${top.rss_per_conn_kb} KB/conn, ${top.wire_bytes_per_msg} B/msg` : undefined);
    }
  }
  return byMode;
}

async function idleCompressed(monitor: Monitor, mode: CompressionMode) {
  return withServer(startService({ WS_MAX_CONNECTIONS: '20000', WS_COMPRESSION: mode }), async (service) => {
    const template = await createSubscriber(service);
    const subscribers = [template, ...(await cloneClients(service, template, Math.ceil(Math.max(...settings.compressionSteps) / IDLE_CONNS_PER_CLIENT) - 1))];
    const publisher = await createPublisher(service);
    const folder = mkdtempSync(join(tmpdir(), 'ws-bench-'));
    try {
      const authFile = join(folder, 'auths.json');
      writeFileSync(authFile, JSON.stringify((await clientTokens(service.base, subscribers)).map((token) => `Bearer ${token}`)));
      const publishFile = join(folder, 'publish.json');
      const publishToken = await clientToken(service.base, publisher, 'notification:publish');
      writeFileSync(publishFile, JSON.stringify({ base: service.base, publishToken, clientIds: subscribers.map((client) => client.client_id) }));
      const args = ['--mode', 'idle', '--url', wsUrl(service.base, STREAM_PATH), '--auth-file', authFile, '--server-pid', String(service.pid), '--count-url', `${service.base}/metrics`];
      args.push('--steps', settings.compressionSteps.join(','), '--settle', String(settings.settleS), '--procs', '2', '--deflate', '--publish-file', publishFile);
      return await measured(monitor, ourLoad(args), ROOT, service);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
}

// ------------------------------------------------------------------ scenarios 6 and 6b: publish -> push

/** 6 (single route) and 6b (batch route) share one service: setting up a thousand subscribers costs more than a run. */
async function pushScenario(monitor: Monitor, which: { single: boolean; batch: boolean }): Promise<Pick<Raw, 'push' | 'batch'>> {
  const raw: Pick<Raw, 'push' | 'batch'> = {};
  await withServer(startService({ WS_MAX_CONNECTIONS: String(settings.pushConns + 100) }), async (service) => {
    const folder = mkdtempSync(join(tmpdir(), 'ws-bench-'));
    try {
      const fixturesFile = join(folder, 'push.json');
      writeFileSync(fixturesFile, JSON.stringify(await pushFixtures(service)));
      if (which.single) raw.push = await pushRuns(monitor, service, fixturesFile, settings.pushRates, 1);
      if (which.batch) raw.batch = await pushRuns(monitor, service, fixturesFile, settings.batchRates, settings.batchSize);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
  return raw;
}

/** Each rate, ours and the anchor alternating, --runs times; `batch` notifications per publish request. */
async function pushRuns(monitor: Monitor, service: RunningService, fixturesFile: string, rates: number[], batch: number): Promise<Record<number, SideRuns>> {
  const byRate: Record<number, SideRuns> = Object.fromEntries(rates.map((rate) => [rate, { ours: [], anchor: [] }]));
  const what = batch > 1 ? `batch ${batch}/request` : 'push';
  for (let run = 0; run < settings.runs; run++) {
    for (const rate of rates) {
      for (const side of sidesFor(run)) {
        const result = side === 'ours' ? await pushOurs(monitor, service, fixturesFile, rate, batch) : await pushAnchor(monitor, rate);
        byRate[rate][side].push(result);
        progress(`${what} ${rate}/s`, side, run, result, result.latency_ms ? `${result.delivered_msgs_per_s} msgs/s, p99 ${result.latency_ms.p99} ms` : undefined);
      }
    }
  }
  return byRate;
}

/** A publisher, and the subscribers (one made by the CLI, the rest cloned) with their tokens. */
async function pushFixtures(service: RunningService): Promise<PushFixtures> {
  const publisher = await createPublisher(service);
  const template = await createSubscriber(service);
  const subscribers = [template, ...(await cloneClients(service, template, settings.pushSubscribers - 1))];
  const tokens = await clientTokens(service.base, subscribers);
  return {
    base: service.base,
    publishToken: await clientToken(service.base, publisher, 'notification:publish'),
    subscribers: subscribers.map((client, index) => ({ clientId: client.client_id, token: tokens[index] })),
    connsPerSubscriber: settings.pushConns / settings.pushSubscribers,
  };
}

/** Same offered rate, warm-up and window for ours and the anchor. */
const pushTiming = (rate: number) => ['--rate', String(rate), '--duration', String(settings.pushDurationS), '--warmup', String(settings.pushWarmupS)];

function pushOurs(monitor: Monitor, service: RunningService, fixturesFile: string, rate: number, batch: number) {
  const args = ['--mode', 'push', '--fixtures', fixturesFile, '--server-pid', String(service.pid), '--inflight', String(settings.pushInflight), '--batch', String(batch), ...pushTiming(rate)];
  if (settings.pushDeflate) args.push('--deflate');
  return measured(monitor, ourLoad(args), ROOT, service);
}

/** The anchors' own fan-out load: targeted round-robin sends over its /control socket. */
function pushAnchor(monitor: Monitor, rate: number) {
  return withServer(anchorServer(['baseline-ws.mjs']), (anchor) => {
    const args = [join(ANCHORS, 'ws-load.mjs'), '--mode', 'fanout', '--url', wsUrl(anchor.url, '/ws'), '--conns', String(settings.pushConns), '--server-pid', String(anchor.pid)];
    return measured(monitor, [...args, ...pushTiming(rate)], ANCHORS);
  });
}

// ------------------------------------------------------------------ scenario 7: replay of a backlog

async function replayScenario(monitor: Monitor): Promise<Record<number, RunResult[]>> {
  const byCount: Record<number, RunResult[]> = Object.fromEntries(settings.replayCounts.map((count) => [count, []]));
  for (let run = 0; run < settings.runs; run++) {
    for (const count of settings.replayCounts) {
      // A fresh service each time: RSS growth of one replay, not of the ones before it.
      const result = await withServer(startService(), async (service) => {
        const warmUp = await createSubscriber(service);
        const [client] = await cloneClients(service, warmUp, 1);
        await insertBacklog(service, warmUp.client_id, 200);
        await insertBacklog(service, client.client_id, count);
        const [warmUpToken, token] = await clientTokens(service.base, [warmUp, client]);
        const args = ['--mode', 'replay', '--url', wsUrl(service.base, STREAM_PATH), '--auth', `Bearer ${token}`, '--count', String(count)];
        args.push('--server-pid', String(service.pid), '--warmup-auth', `Bearer ${warmUpToken}`, '--warmup-count', '200');
        return measured(monitor, ourLoad(args), ROOT, service);
      });
      byCount[count].push(result);
      progress(`replay ${count}`, 'ours', run, result, result.total_ms ? `${result.msgs_per_s} msgs/s, RSS +${result.rss_growth_mb} MB` : undefined);
    }
  }
  return byCount;
}

// ------------------------------------------------------------------ scenario 8: a fleet on one PostgreSQL

async function fleetScenario(monitor: Monitor): Promise<Record<number, RunResult[]>> {
  const bySize: Record<number, RunResult[]> = Object.fromEntries(settings.fleetSizes.map((size) => [size, []]));
  // One public address for the whole fleet, as behind a load balancer: tokens name it as their
  // issuer and audience, so a token one instance issued is good at every other.
  const publicUrl = 'http://localhost:8080';
  const env = { WS_MAX_CONNECTIONS: String(settings.pushConns + 100), API_URL: publicUrl, IDENTITY_URL: publicUrl, FRONTEND_URL: publicUrl };
  // The first instance's DATA_DIR, its cluster made beforehand so pg_stat_statements is loaded when the service starts it.
  const dataDir = mkdtempSync(join(tmpdir(), 'ws-fleet-'));
  const folder = mkdtempSync(join(tmpdir(), 'ws-bench-'));
  try {
    await prepareCluster(dataDir, FLEET_SERVER_SETTINGS);
    await withServer(startService({ ...env, DATA_DIR: dataDir }), async (first) => {
      await withDatabase(first, (db) => db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements'));
      const fixtures = await pushFixtures(first);
      for (const size of settings.fleetSizes) {
        // Only this size's instances run: an idle extra one would still hear every NOTIFY.
        await withFleet(first, size - 1, env, async (others) => {
          const fixturesFile = join(folder, `fleet-${size}.json`);
          writeFileSync(fixturesFile, JSON.stringify({ ...fixtures, bases: [first.base, ...others.map((other) => other.base)] }));
          for (let run = 0; run < settings.runs; run++) {
            const result = await fleetRun(monitor, first, others, fixturesFile);
            bySize[size].push(result);
            const summary = result.latency_ms && `${result.delivered_msgs_per_s} msgs/s, p99 ${result.latency_ms.p99} ms, node ${result.servers_cpu_pct_of_core}%, PostgreSQL ${result.database?.pg_cpu_pct_of_core}%`;
            progress(`fleet of ${size}`, 'ours', run, result, summary);
          }
        });
      }
    });
  } finally {
    rmSync(folder, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  }
  return bySize;
}

/** `count` more instances on the first one's PostgreSQL (DATABASE_URL set: they start no server of their own), stopped after `use`. */
async function withFleet<R>(first: RunningService, count: number, env: Record<string, string>, use: (others: RunningService[]) => Promise<R>): Promise<R> {
  const others: RunningService[] = [];
  try {
    for (let index = 0; index < count; index++) {
      const other = await startService({ ...env, DATABASE_URL: first.databaseUrl });
      running.add(other.stop);
      others.push(other);
    }
    return await use(others);
  } finally {
    for (const other of others) running.delete(other.stop);
    await Promise.all(others.map((other) => other.stop()));
  }
}

function fleetRun(monitor: Monitor, first: RunningService, others: RunningService[], fixturesFile: string) {
  const args = ['--mode', 'push', '--fixtures', fixturesFile, '--server-pid', String(first.pid), '--inflight', String(settings.pushInflight)];
  if (others.length) args.push('--server-pids', others.map((other) => other.pid).join(','));
  args.push('--pg-url', first.databaseUrl, '--pg-pid', String(first.postmaster), '--batch', String(settings.batchSize), ...pushTiming(settings.fleetRate));
  return measured(monitor, ourLoad(args), ROOT, first);
}

// ------------------------------------------------------------------ NOTIFY probe: PostgreSQL alone

/** A fresh PostgreSQL (no service, nobody else LISTENing) on CPU 0; the probe on CPU 1. */
async function notifyScenario(monitor: Monitor): Promise<RunResult[]> {
  return withServer(startBareDatabase(), async (database) => {
    const runs: RunResult[] = [];
    for (let run = 0; run < settings.runs; run++) {
      const args = ['--import', 'tsx', join(ROOT, 'bench/load/notify-probe.ts'), '--url', database.url, '--pg-pid', String(database.postmaster)];
      args.push('--conns', String(settings.notifyConns), '--duration', String(settings.notifyDurationS), '--listeners', settings.notifyListeners);
      const result = await measured(monitor, args, ROOT, database);
      // The probe's backends exit with it, between the snapshots measured() takes: its own per-variant figures count.
      result.database_cpu_pct_of_core = null;
      runs.push(result);
      const summary = result.variants && (result.variants as { name: string; commits_per_s: number }[]).map((v) => `${v.name} ${v.commits_per_s}/s`).join(', ');
      progress('notify probe', 'ours', run, result, summary);
    }
    return runs;
  });
}

// ------------------------------------------------------------------ running things

/** Even runs measure ours first, odd runs the anchor first, so drift on the machine hits both alike. */
const sidesFor = (run: number): Side[] => (run % 2 === 0 ? ['ours', 'anchor'] : ['anchor', 'ours']);

const ourLoad = (args: string[]) => ['--import', 'tsx', join(ROOT, 'bench/lib/ws-load.ts'), ...args];
const wsUrl = (base: string, path: string) => `${base.replace(/^http/, 'ws')}${path}`;

/** Starts a server, uses it, and stops it whatever happens. */
async function withServer<T extends { stop: () => Promise<void> }, R>(starting: Promise<T>, use: (server: T) => Promise<R>): Promise<R> {
  const server = await starting;
  running.add(server.stop);
  try {
    return await use(server);
  } finally {
    running.delete(server.stop);
    await server.stop();
  }
}

/**
 * One measured run of a load generator on CPU 1, after waiting for a quiet machine. Foreign CPU is
 * what processes outside this script's tree used meanwhile, minus our service's PostgreSQL.
 */
async function measured(monitor: Monitor, loadArgs: string[], cwd: string, service?: { databaseCpuPct: (a: Snapshot, b: Snapshot) => number }): Promise<RunResult> {
  const quiet = await monitor.waitQuiet({ maxPct: 5, maxWaitS: settings.quietWaitS });
  const before = monitor.snapshot();
  const result = (await loadOnCpu1<RunResult>(loadArgs, cwd)) as RunResult;
  const after = monitor.snapshot();
  const database = service ? service.databaseCpuPct(before, after) : 0;
  const foreign = monitor.foreignCpu(before, after);
  result.database_cpu_pct_of_core = database;
  result.foreign_cpu_pct_of_core = round(foreign.foreign_cpu_pct_of_core - database);
  result.foreign_top = foreign.foreign_top;
  result.quiet_wait_s = quiet.waited_s;
  result.clean = !result.error && result.foreign_cpu_pct_of_core! < settings.cleanMaxPct;
  return result;
}

function progress(what: string, side: Side, run: number, result: RunResult, summary?: string) {
  const disturbed = result.clean ? '' : ` (disturbed: foreign ${result.foreign_cpu_pct_of_core}% of a core)`;
  console.error(`${what} ${side} run ${run + 1}: ${result.error ?? summary ?? 'no result'}${disturbed}`);
}

// ------------------------------------------------------------------ report

interface Row {
  scenario: string;
  ours: string;
  anchor: string;
  ratio: number | null;
  target: string;
  met: boolean | null;
  clean: string;
}

/** Clean runs; when there is none, every run that produced a result (the clean column says so). */
function counted(runs: RunResult[]): RunResult[] {
  const clean = runs.filter((run) => run.clean);
  return clean.length ? clean : runs.filter((run) => !run.error);
}

/** The median over counted runs of one figure, with its range when there are several. */
function figure(runs: RunResult[], get: (run: RunResult) => number | null | undefined) {
  const values = counted(runs).map(get).filter((value): value is number => typeof value === 'number' && Number.isFinite(value));
  return { median: median(values), min: values.length ? Math.min(...values) : undefined, max: values.length ? Math.max(...values) : undefined, n: values.length };
}

function show(stat: ReturnType<typeof figure>, digits = 0, unit = ''): string {
  if (stat.median === undefined) return '—';
  const f = (value: number) => value.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });
  return stat.n > 1 ? `${f(stat.median)}${unit} (${f(stat.min!)}–${f(stat.max!)})` : `${f(stat.median)}${unit}`;
}

const cleanOf = (runs: RunResult[]) => `${runs.filter((run) => run.clean).length}/${runs.length}`;

function idleRows(runs: SideRuns): Row[] {
  const step = (target: number) => (run: RunResult) => (run.steps as { target: number; held: number; rss_mb: number; rss_per_conn_kb: number }[] | undefined)?.find((s) => s.target === target);
  const clean = `${cleanOf(runs.ours)}, ${cleanOf(runs.anchor)}`;
  const rows: Row[] = settings.steps.map((target) => {
    const kb = (side: Side) => figure(runs[side], (run) => step(target)(run)?.rss_per_conn_kb);
    const total = (side: Side) => figure(runs[side], (run) => step(target)(run)?.rss_mb);
    const ratio = kb('ours').median && kb('anchor').median ? kb('ours').median! / kb('anchor').median! : null;
    const atTarget = target === 10_000;
    return {
      scenario: `5 idle: RSS at ${target.toLocaleString('en')} connections`,
      ours: `${show(kb('ours'), 1, ' KB/conn')}; ${show(total('ours'), 0, ' MB')}`,
      anchor: `${show(kb('anchor'), 1, ' KB/conn')}; ${show(total('anchor'), 0, ' MB')}`,
      ratio,
      target: atTarget ? '≤ 1.2× bare ws per connection' : '—',
      met: atTarget ? ratio !== null && ratio <= 1.2 : null,
      clean,
    };
  });
  const top = Math.max(...settings.steps);
  const held = (side: Side) => figure(runs[side], (run) => step(top)(run)?.held);
  const connectS = (side: Side) => figure(runs[side], (run) => run.steps?.reduce((sum: number, s: { connect_s: number }) => sum + s.connect_s, 0));
  rows.push({
    scenario: `5 idle: connections held by one process (of ${top.toLocaleString('en')})`,
    ours: `${show(held('ours'))}; opened in ${show(connectS('ours'), 1, ' s')}`,
    anchor: `${show(held('anchor'))}; opened in ${show(connectS('anchor'), 1, ' s')}`,
    ratio: null,
    target: '19,000 held',
    met: top >= 19_000 ? held('ours').min !== undefined && held('ours').min! >= 19_000 : null,
    clean,
  });
  return rows;
}

function compressionRows(byMode: Record<CompressionMode, RunResult[]>): Row[] {
  const step = (target: number) => (run: RunResult) => (run.steps as { target: number; rss_per_conn_kb: number; rss_mb: number; wire_bytes_per_msg: number }[] | undefined)?.find((s) => s.target === target);
  const clean = COMPRESSION_MODES.map((mode) => `${mode} ${cleanOf(byMode[mode])}`).join(', ');
  const rows: Row[] = [];
  for (const target of settings.compressionSteps) {
    const kb = (mode: CompressionMode) => figure(byMode[mode], (run) => step(target)(run)?.rss_per_conn_kb);
    const total = (mode: CompressionMode) => figure(byMode[mode], (run) => step(target)(run)?.rss_mb);
    const cell = (mode: CompressionMode) => `${show(kb(mode), 1, ' KB/conn')}; ${show(total(mode), 0, ' MB')}`;
    for (const mode of ['on', 'context-takeover'] as const) {
      const ratio = kb(mode).median && kb('off').median ? kb(mode).median! / kb('off').median! : null;
      rows.push({
        scenario: `5c idle after one notification each, permessage-deflate offered: RSS at ${target.toLocaleString('en')} connections, WS_COMPRESSION=${mode} (ours) against off (anchor column)`,
        ours: cell(mode),
        anchor: cell('off'),
        ratio,
        target: mode === 'on' ? '≤ 1.5× off' : '— (context kept: memory for bytes)',
        met: mode === 'on' ? ratio !== null && ratio <= 1.5 : null,
        clean,
      });
    }
  }
  const top = Math.max(...settings.compressionSteps);
  const first = (mode: CompressionMode) => figure(byMode[mode], (run) => step(top)(run)?.wire_bytes_per_msg);
  const following = (mode: CompressionMode) => figure(byMode[mode], (run) => run.following_wire_bytes_per_msg);
  const bytes = (mode: CompressionMode) => `first ${show(first(mode), 0, ' B')}, following ${show(following(mode), 0, ' B')}`;
  rows.push({
    scenario: '5c a notification of 374 bytes on the wire (frame and delivery ping included): on (ours) against off',
    ours: `on: ${bytes('on')}; context-takeover: ${bytes('context-takeover')}`,
    anchor: `off: ${bytes('off')}`,
    ratio: first('on').median && first('off').median ? first('on').median! / first('off').median! : null,
    target: '—',
    met: null,
    clean,
  });
  return rows;
}

/** What a publish → push row is called, its target and whether the medians meet it. */
interface PushRowKind {
  scenario: (rate: number) => string;
  target: string;
  met: (delivered: number, p99: number, maxLost: number | undefined, ratio: number | null) => boolean;
}

const SINGLE_PUSH: PushRowKind = {
  scenario: (rate) => `6 publish → push, ${rate.toLocaleString('en')}/s offered, ${settings.pushConns.toLocaleString('en')} conns${settings.pushDeflate ? ', permessage-deflate offered' : ''}`,
  target: '≥ 6,000/s delivered, p99 ≤ 50 ms, 0 lost',
  met: (delivered, p99, maxLost) => delivered >= 6_000 && p99 <= 50 && maxLost === 0,
};

const BATCH_PUSH: PushRowKind = {
  scenario: (rate) =>
    `6b batch publish (${settings.batchSize}/request) → push, ${rate.toLocaleString('en')}/s offered, ${settings.pushConns.toLocaleString('en')} conns${settings.pushDeflate ? ', permessage-deflate offered' : ''}`,
  target: '≥ 20,000/s delivered, p99 ≤ 100 ms, 0 lost, ≥ 1.0× bare ws',
  met: (delivered, p99, maxLost, ratio) => delivered >= 20_000 && p99 <= 100 && maxLost === 0 && ratio !== null && ratio >= 1.0,
};

function pushRows(byRate: Record<number, SideRuns>, kind: PushRowKind): Row[] {
  return Object.entries(byRate).map(([rate, runs]) => {
    const delivered = (side: Side) => figure(runs[side], (run) => run.delivered_msgs_per_s);
    const p99 = (side: Side) => figure(runs[side], (run) => run.latency_ms?.p99);
    const lost = (side: Side) => figure(runs[side], (run) => run.lost ?? run.lost_or_late);
    const published = figure(runs.ours, (run) => run.publish_rate_achieved);
    const requests = figure(runs.ours, (run) => run.requests_per_s);
    const ratio = delivered('ours').median && delivered('anchor').median ? delivered('ours').median! / delivered('anchor').median! : null;
    const cell = (side: Side) => `${show(delivered(side), 0, '/s')} delivered; p99 ${show(p99(side), 1, ' ms')}; lost ${show(lost(side))}`;
    const batched = kind === BATCH_PUSH ? `; ${settings.batchSize}/request, ${show(requests, 0, ' requests/s')}` : '';
    return {
      scenario: kind.scenario(Number(rate)),
      ours: `${cell('ours')}; published ${show(published, 0, '/s')}${batched}`,
      anchor: cell('anchor'),
      ratio,
      target: kind.target,
      met: kind.met(delivered('ours').median ?? 0, p99('ours').median ?? Infinity, lost('ours').max, ratio),
      clean: `${cleanOf(runs.ours)}, ${cleanOf(runs.anchor)}`,
    };
  });
}

function replayRows(byCount: Record<number, RunResult[]>): Row[] {
  return Object.entries(byCount).map(([count, runs]) => {
    const rate = figure(runs, (run) => run.msgs_per_s);
    const seconds = figure(runs, (run) => run.total_ms / 1000);
    const growth = figure(runs, (run) => run.rss_growth_mb);
    const perMessage = `${show(figure(runs, (run) => run.us_per_msg), 1, ' µs')} and ${show(figure(runs, (run) => run.rss_growth_kb_per_msg), 2, ' KB')} per msg`;
    const incomplete = counted(runs).filter((run) => run.received !== Number(count) || run.out_of_order > 0 || run.duplicates > 0).length;
    const atTarget = Number(count) === 10_000;
    return {
      scenario: `7 replay of ${Number(count).toLocaleString('en')} on connect`,
      ours: `${show(rate, 0, ' msgs/s')}; ${show(seconds, 2, ' s')}; RSS +${show(growth, 1, ' MB')}; ${perMessage}${incomplete ? `; ${incomplete} run(s) incomplete or out of order` : ''}`,
      anchor: '—',
      ratio: null,
      target: atTarget ? '≥ 20,000 msgs/s' : 'linear in N',
      met: atTarget ? (rate.median ?? 0) >= 20_000 && incomplete === 0 : null,
      clean: cleanOf(runs),
    };
  });
}

/** One row per fleet size: the delivery figures, and where CPU and PostgreSQL's time went. */
function fleetRows(bySize: Record<number, RunResult[]>): Row[] {
  return Object.entries(bySize).map(([size, runs]) => {
    const delivered = figure(runs, (run) => run.delivered_msgs_per_s);
    const p99 = figure(runs, (run) => run.latency_ms?.p99);
    const lost = figure(runs, (run) => run.lost);
    // A fleet whose requests wait longer keeps the generator's --push-inflight slots full: it is then sent less than offered.
    const sent = figure(runs, (run) => run.publish_rate_achieved);
    const refused = figure(runs, (run) => run.element_outcomes?.refused);
    const nodeCpu = figure(runs, (run) => run.servers_cpu_pct_of_core);
    const pgCpu = figure(runs, (run) => run.database?.pg_cpu_pct_of_core);
    const share = (key: string) => figure(runs, (run) => run.database?.statements?.[key]);
    const appCpu = (name: string) => figure(runs, (run) => run.database?.cpu_by_application?.[name]?.cpu_pct_of_core ?? 0);
    const instances = `${size} instance${size === '1' ? '' : 's'}`;
    return {
      scenario: `8 fleet of ${instances} on one PostgreSQL, batch publish (${settings.batchSize}/request) at ${settings.fleetRate.toLocaleString('en')}/s offered, ${settings.pushConns.toLocaleString('en')} conns, all on CPU 0`,
      ours: [
        `${show(delivered, 0, '/s')} delivered; p99 ${show(p99, 1, ' ms')}; lost ${show(lost)}`,
        `sent ${show(sent, 0, '/s')} of the offered (the rest held back by ${settings.pushInflight} requests in flight), ${show(refused)} elements refused`,
        `CPU: node (all instances) ${show(nodeCpu, 0, '%')}, PostgreSQL ${show(pgCpu, 0, '%')} of a core`,
        `PostgreSQL CPU: pools ${show(appCpu('voyage-connect'), 0, '%')}, listeners ${show(appCpu(LISTENER_NAME), 0, '%')}, walwriter ${show(appCpu('walwriter'), 0, '%')}`,
        `PostgreSQL exec time: publish statements ${show(share('publish_share_pct'), 0, '%')}, delivery reads ${show(share('delivery_reads_share_pct'), 0, '%')}, BEGIN/COMMIT ${show(share('transaction_control_share_pct'), 0, '%')}`,
        `NOTIFYs per publish transaction (each heard by every instance): ${show(share('notifies_per_transaction'), 2, '')} in ${show(share('publish_transactions_notifying'), 0, '')} transactions`,
      ].join('; '),
      anchor: '—',
      ratio: null,
      target: '— (one CPU shared: the cost of fan-out across instances, not scaling)',
      met: null,
      clean: cleanOf(runs),
    };
  });
}

/** One row per probe variant; the ratio column is commits/s with NOTIFY over without. */
function notifyRows(runs: RunResult[]): Row[] {
  type Variant = { name: string; notify: boolean; commits_per_s: number; ratio_to_plain?: number; latency_ms: { p99: number }; database_cpu_pct_of_core: number };
  const names = (counted(runs)[0]?.variants as Variant[] | undefined)?.map((variant) => variant.name) ?? [];
  return names.map((name) => {
    const of = (run: RunResult) => (run.variants as Variant[] | undefined)?.find((variant) => variant.name === name);
    const rate = figure(runs, (run) => of(run)?.commits_per_s);
    const p99 = figure(runs, (run) => of(run)?.latency_ms.p99);
    const ratio = figure(runs, (run) => of(run)?.ratio_to_plain);
    return {
      scenario: `NOTIFY probe (PostgreSQL alone, ${settings.notifyConns} conns): BEGIN; INSERT; ${name.startsWith('notify') ? 'NOTIFY; ' : ''}COMMIT — ${name}`,
      ours: `${show(rate, 0, ' commits/s')}; p99 ${show(p99, 1, ' ms')}; PostgreSQL ${show(figure(runs, (run) => of(run)?.database_cpu_pct_of_core), 0, '%')} of a core`,
      anchor: '—',
      ratio: ratio.median ?? null,
      target: '— (ratio: with NOTIFY / without)',
      met: null,
      clean: cleanOf(runs),
    };
  });
}

function report(raw: Raw) {
  const rows = [
    ...(raw.idle ? idleRows(raw.idle) : []),
    ...(raw.compression ? compressionRows(raw.compression) : []),
    ...(raw.push ? pushRows(raw.push, SINGLE_PUSH) : []),
    ...(raw.batch ? pushRows(raw.batch, BATCH_PUSH) : []),
    ...(raw.replay ? replayRows(raw.replay) : []),
    ...(raw.fleet ? fleetRows(raw.fleet) : []),
    ...(raw.notify ? notifyRows(raw.notify) : []),
  ];
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  const file = join(ROOT, `bench/results/ws-${stamp}.json`);
  writeFileSync(file, JSON.stringify({ machine: machine(), settings, rows, raw }, null, 2));
  console.log('| scenario | voyage-connect, median (min–max) | anchor (bare ws), median (min–max) | ratio | target | met | clean runs (ours, anchor) |');
  console.log('|---|---|---|---|---|---|---|');
  for (const row of rows) {
    const met = row.met === null ? '—' : row.met ? 'yes' : 'no';
    console.log(`| ${row.scenario} | ${row.ours} | ${row.anchor} | ${row.ratio === null ? '—' : `${row.ratio.toFixed(2)}×`} | ${row.target} | ${met} | ${row.clean} |`);
  }
  console.log(`\n${file}`);
}

// ------------------------------------------------------------------ entry

async function stopEverything() {
  await Promise.allSettled([...running].map((stop) => stop()));
  running.clear();
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`${signal}: stopping the servers`);
    void stopEverything().finally(() => process.exit(130));
  });
}

try {
  await main();
} finally {
  await stopEverything();
}
