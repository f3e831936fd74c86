/**
 * The NOTIFY ceiling of PostgreSQL itself, no service: --conns connections loop
 * `BEGIN; INSERT a small row; NOTIFY ch, '<n>'; COMMIT` for --duration seconds, with 0, 1 and 4
 * (--listeners) LISTENing connections attached that drain the notifications, and the same
 * transaction without NOTIFY for comparison. PostgreSQL takes a global lock on the notify queue
 * from queueing a transaction's notifications until its commit is done, so commits that NOTIFY
 * are serialised (their WAL flushes no longer group); the with/without ratio is the point.
 * Run by bench/websocket.ts (`--only notify`, and with `fleet`) pinned to CPU 1, the database on
 * CPU 0; prints one JSON line.
 *
 *   node --import tsx bench/load/notify-probe.ts --url postgres://… [--pg-pid P] [--conns 20]
 *       [--duration 5] [--warmup 1] [--listeners 0,1,4]
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { childrenOf, cpuSeconds, now, percentile, round, sleep } from '../lib/ws-common.js';

const { values: opt } = parseArgs({
  options: {
    url: { type: 'string' },
    'pg-pid': { type: 'string' },
    conns: { type: 'string', default: '20' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    listeners: { type: 'string', default: '0,1,4' },
    'max-runtime': { type: 'string', default: '300' },
  },
});

const CHANNEL = 'bench_probe';
const POSTMASTER = Number(opt['pg-pid']);

interface Variant {
  name: string;
  notify: boolean;
  listeners: number;
}

/** One simple-query round trip per transaction, so the client adds as little as it can. */
const transaction = (notify: boolean, n: number) =>
  `BEGIN; INSERT INTO notify_probe (recipient, payload) VALUES ('r${n % 1000}', 'x'); ${notify ? `NOTIFY ${CHANNEL}, '${n}'; ` : ''}COMMIT`;

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: opt.url, application_name: 'bench-notify-probe' });
  await client.connect();
  return client;
}

/** CPU seconds of the postmaster and all its children (the backends come and go with the variants). */
const databaseCpu = () => (POSTMASTER ? [POSTMASTER, ...childrenOf(POSTMASTER)].reduce((sum, pid) => sum + (cpuSeconds(pid) || 0), 0) : Number.NaN);

async function runVariant(variant: Variant, conns: pg.Client[]) {
  const listeners = await Promise.all(Array.from({ length: variant.listeners }, connect));
  const heard = listeners.map(() => 0);
  await Promise.all(
    listeners.map(async (listener, index) => {
      listener.on('notification', () => heard[index]++);
      await listener.query(`LISTEN ${CHANNEL}`);
    }),
  );
  const warmupEnd = now() + Number(opt.warmup) * 1000;
  const end = warmupEnd + Number(opt.duration) * 1000;
  const latencies: number[] = [];
  let commits = 0;
  let sent = 0;
  let errors = 0;
  // The window is fixed in time, so a stall (every connection waiting) shows as a low rate, not as no window.
  let atStart = { database: databaseCpu(), self: process.cpuUsage() };
  const windowStarts = setTimeout(() => (atStart = { database: databaseCpu(), self: process.cpuUsage() }), Math.max(0, warmupEnd - now()));
  const loops = conns.map(async (client) => {
    while (now() < end) {
      const started = now();
      try {
        await client.query(transaction(variant.notify, sent++));
      } catch {
        errors++;
        continue;
      }
      const finished = now();
      if (finished < warmupEnd || finished >= end) continue;
      commits++;
      latencies.push(finished - started);
    }
  });
  const atEnd = new Promise<{ database: number; self: NodeJS.CpuUsage }>((resolve) =>
    setTimeout(() => resolve({ database: databaseCpu(), self: process.cpuUsage(atStart.self) }), end - now()),
  );
  await Promise.all(loops);
  clearTimeout(windowStarts);
  const seconds = Number(opt.duration);
  const { database, self } = await atEnd;
  const databaseCpuPct = ((database - atStart.database) / seconds) * 100;
  // The listeners must have heard every NOTIFY sent (warm-up included) before they are closed.
  const drainStart = now();
  while (variant.notify && heard.some((count) => count < sent - errors) && now() - drainStart < 5_000) await sleep(20);
  await Promise.all(listeners.map((listener) => listener.end()));
  latencies.sort((a, b) => a - b);
  return {
    ...variant,
    commits,
    commits_per_s: Math.round(commits / seconds),
    errors,
    latency_ms: { p50: round(percentile(latencies, 50) ?? Number.NaN, 2), p99: round(percentile(latencies, 99) ?? Number.NaN, 2), max: round(latencies.at(-1) ?? Number.NaN, 2) },
    notifications_heard_per_listener: variant.listeners ? heard : undefined,
    listeners_kept_up: variant.listeners ? heard.every((count) => count >= sent - errors) : undefined,
    listener_drain_ms: variant.listeners ? Math.round(now() - drainStart) : undefined,
    database_cpu_pct_of_core: round(databaseCpuPct, 1),
    probe_cpu_pct_of_core: round(((self.user + self.system) / 1e6 / seconds) * 100, 1),
  };
}

async function main() {
  setTimeout(() => {
    console.error('notify-probe: max runtime reached');
    process.exit(2);
  }, Number(opt['max-runtime']) * 1000).unref();
  const admin = await connect();
  await admin.query('CREATE TABLE IF NOT EXISTS notify_probe (id bigserial PRIMARY KEY, recipient text NOT NULL, payload text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())');
  const conns = await Promise.all(Array.from({ length: Number(opt.conns) }, connect));
  try {
    // Without NOTIFY first and last: the ratio is taken against their mean, so drift shows.
    const variants: Variant[] = [
      { name: 'plain', notify: false, listeners: 0 },
      ...opt.listeners!.split(',').map((n) => ({ name: `notify, ${n} listening`, notify: true, listeners: Number(n) })),
      { name: 'plain (again)', notify: false, listeners: 0 },
    ];
    const results = [];
    for (const variant of variants) results.push(await runVariant(variant, conns));
    const plain = results.filter((result) => !result.notify);
    const plainRate = plain.reduce((sum, result) => sum + result.commits_per_s, 0) / plain.length;
    const { rows } = await admin.query<{ version: string }>('SHOW server_version');
    console.log(
      JSON.stringify({
        mode: 'notify-probe',
        method: `${opt.conns} connections each looping one simple-query round trip "BEGIN; INSERT INTO notify_probe …; [NOTIFY ${CHANNEL}, '<n>';] COMMIT" for ${opt.duration} s after ${opt.warmup} s warm-up; synchronous_commit on (the default); listeners are separate connections that LISTEN and count what they hear; database CPU from /proc of the postmaster and its children.`,
        server_version: rows[0].version,
        conns: Number(opt.conns),
        duration_s: Number(opt.duration),
        plain_commits_per_s: Math.round(plainRate),
        variants: results.map((result) => ({ ...result, ratio_to_plain: result.notify ? round(result.commits_per_s / plainRate, 3) : undefined })),
      }),
    );
  } finally {
    await Promise.all(conns.map((client) => client.end()));
    await admin.query('DROP TABLE IF EXISTS notify_probe');
    await admin.end();
  }
  process.exit(0);
}

await main();
