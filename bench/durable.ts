/**
 * Durable push, side by side: the anchors' judge (../shared/anchors/durable-push.mjs `series`) run
 * against this tree, beside bare `ws` fan-out at the same offered rates (the physical limit: nothing
 * stored). The judge's workload, the same for every target: 1,000 WebSocket subscribers, one
 * recipient each, open-loop publishing at each offered rate, single publishes and batches of 100
 * where the target has them, a 605-byte notification, a publish counted once acked ("stored").
 * Targets: voyage-connect (`node dist/main.js` of this tree, on the machine's PostgreSQL at
 * --database-url, a database the judge creates and drops: by default dp_bench_<pid>, not the
 * judge's dp_bench, and free ports, so that a series run by hand meanwhile is left alone), NATS
 * JetStream, Mosquitto. Servers on
 * CPU 0, each run's load generator on CPU 1 (PostgreSQL unpinned), every measured run after the
 * judge's load-average gate (--load-max, --load-deadline).
 *
 *   npm run build   # once: dist/ must exist (npm run bench:durable builds first)
 *   npx tsx bench/durable.ts [--rates 2000,6000,12000] [--runs 3] [--quick] [--duration 10] [--warmup 3]
 *       [--targets voyage,nats,mosquitto] [--modes single,batch] [--replay-runs 3]
 *       [--load-max 0.6] [--load-deadline <ISO time>] [--database-url postgres://postgres@127.0.0.1:5432/dp_bench_<pid>]
 *       [--no-ws] [--ws-payload-bytes 558] [--quiet-wait 60] [--clean-max 10]
 *       [-- <more options for durable-push.mjs series>]
 *   npx tsx bench/durable.ts --chart-from bench/results/durable-<ts>.json [--chart-out file.svg]
 *       (also takes the judge's own durable-<ts>-summary.json: redraws table and chart, runs nothing)
 *
 * --quick: one run at 2,000 and 6,000/s, one offline replay (a smoke test, not a result).
 * Bare ws: ../shared/anchors/baseline-ws.mjs, a fresh one per run on CPU 0, driven by the anchors'
 * ws-load.mjs --mode fanout (1,000 connections, round-robin, same warm-up and window as the judge,
 * a padded payload so each frame carries ~605 bytes), after the quiet-machine check of the other
 * benches; a run in which other processes used ≥ --clean-max % of a core is left out of the
 * medians when clean runs exist.
 * Prints the durability of an acknowledged message per target and a markdown table; writes
 * bench/results/durable-<timestamp>.json (the judge's summary and every run, the ws runs, the
 * rows) and bench/results/durable-<timestamp>.svg (delivered/s and p99 against offered rate).
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type ChartSeries, writeChart } from './lib/chart.js';
import { ANCHORS, anchorServer, ensureAnchorsInstalled, freePort, loadOnCpu1, machine, ROOT, sysmon } from './lib/harness.js';
import { median } from './lib/ws-common.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rates: { type: 'string' },
    runs: { type: 'string' },
    quick: { type: 'boolean', default: false },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    targets: { type: 'string' },
    modes: { type: 'string' },
    'replay-runs': { type: 'string' },
    'load-max': { type: 'string' },
    'load-deadline': { type: 'string' },
    'database-url': { type: 'string' },
    'no-ws': { type: 'boolean', default: false },
    'ws-payload-bytes': { type: 'string', default: '558' },
    'quiet-wait': { type: 'string', default: '60' },
    'clean-max': { type: 'string', default: '10' },
    'chart-from': { type: 'string' },
    'chart-out': { type: 'string' },
  },
});
const quick = values.quick!;
const settings = {
  rates: (values.rates ?? (quick ? '2000,6000' : '2000,6000,12000')).split(',').map(Number),
  runs: Number(values.runs ?? (quick ? 1 : 3)),
  durationS: Number(values.duration),
  warmupS: Number(values.warmup),
  replayRuns: values['replay-runs'] ?? (quick ? '1' : undefined),
  ws: !values['no-ws'],
  wsConns: 1000,
  wsPayloadBytes: Number(values['ws-payload-bytes']),
  quietWaitS: Number(values['quiet-wait']),
  cleanMaxPct: Number(values['clean-max']),
};

// ------------------------------------------------------------------ shapes

/** Median, min, max over runs (the judge's summary uses the same shape). */
interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

/** One line of the table: a target and mode at one offered rate. */
interface Row {
  target: string;
  label: string;
  mode: 'single' | 'batch' | 'fanout';
  offered: number;
  runs: number;
  counted: number;
  sustains: boolean | null;
  sent: Spread | null;
  delivered: Spread | null;
  p50: Spread | null;
  p99: Spread | null;
  serverCpu: Spread | null;
  nodeCpu: Spread | null;
  postgresCpu: Spread | null;
  lost: Spread | null;
  refused: Spread | null;
  /** CPU other processes on the machine used during the run (% of a core): ≥ 10 disturbs a run. */
  othersCpu: Spread | null;
}

/** What an acknowledged message is worth on each target. */
interface Durability {
  target: string;
  label: string;
  version: string;
  ack: string;
  disk: string;
  fsyncBeforeAck: boolean;
  /** A few words for the chart. */
  short: string;
  /** The judge's own words, when it recorded them. */
  recorded?: string;
}

type Json = Record<string, any>;
type RunResult = Json & { error?: string; clean?: boolean };

const TARGET_ORDER = ['voyage', 'nats', 'mosquitto', 'ws'];
const MODE_ORDER = ['single', 'batch', 'fanout'];
const WS_LABEL = 'bare ws';

// ------------------------------------------------------------------ the judge's series

/**
 * The judge's argv after `node durable-push.mjs`. Its servers get free ports (NATS and Mosquitto
 * use the next port too) and voyage-connect a database of this run's own, which the judge creates
 * and drops: with its defaults (port 3300, dp_bench) a second series running meanwhile would have
 * its database dropped and its service answered by ours.
 */
async function judgeArgs(out: string) {
  const args = ['series', '--voyage-dir', ROOT, '--out', out, '--rates', settings.rates.join(','), '--runs', String(settings.runs)];
  args.push('--duration', String(settings.durationS), '--warmup', String(settings.warmupS));
  args.push('--voyage-port', String(await freePort()), '--nats-port', String(await freePortPair()), '--mosquitto-port', String(await freePortPair()));
  const databaseUrl = values['database-url'] ?? `postgres://postgres@127.0.0.1:5432/dp_bench_${process.pid}`;
  const passed = { targets: values.targets, modes: values.modes, 'replay-runs': settings.replayRuns, 'load-max': values['load-max'], 'load-deadline': values['load-deadline'], 'database-url': databaseUrl };
  for (const [name, value] of Object.entries(passed)) if (value !== undefined) args.push(`--${name}`, value);
  return [...args, ...positionals];
}

const listens = (port: number) =>
  new Promise<boolean>((done) => {
    const server = createServer().once('error', () => done(false));
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
  });

/**
 * A free port whose next one is free too, below the ephemeral range (32768 up): there, a machine
 * holding thousands of outgoing connections (the idle scenario) has most neighbours taken.
 */
async function freePortPair(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + 2 * Math.floor(Math.random() * 6_000);
    if ((await listens(port)) && (await listens(port + 1))) return port;
  }
  throw new Error('no two free ports in a row');
}

/** Other durable-push.mjs processes on the machine (another series loads the same cores). */
function otherJudges(): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (argv.some((arg) => arg.endsWith('durable-push.mjs')) && argv.includes('series')) found.push(`${pid}: ${argv.join(' ').trim()}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Runs the judge; its progress (stderr) and its own tables (stdout) go to our stderr. */
async function runJudge(): Promise<{ argv: string[]; summary: Json; runs: Json[] }> {
  const out = mkdtempSync(join(tmpdir(), 'durable-bench-'));
  const others = otherJudges();
  if (others.length) console.error(`another durable-push series is running (its load will show in ours; the judge's load gate waits for it unless --load-deadline has passed):\n  ${others.join('\n  ')}`);
  const argv = [join(ANCHORS, 'durable-push.mjs'), ...(await judgeArgs(out))];
  console.error(`judge: node ${argv.join(' ')}`);
  try {
    const child = spawn(process.execPath, argv, { cwd: ANCHORS, stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout.pipe(process.stderr);
    const exited = new Promise<number | null>((done) => child.once('exit', done));
    // On a signal the judge stops its servers and drops its database: wait for that.
    const stop = () => (child.kill('SIGTERM'), exited);
    running.add(stop);
    const code = await exited;
    running.delete(stop);
    const summaryFile = readdirSync(out).find((name) => name.endsWith('-summary.json'));
    if (code !== 0 || !summaryFile) throw new Error(`durable-push.mjs series exited ${code}${summaryFile ? '' : ' without a summary'}`);
    const rawFile = readdirSync(out).find((name) => name.endsWith('.jsonl'));
    const runs = rawFile ? readFileSync(join(out, rawFile), 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Json) : [];
    const summary = JSON.parse(readFileSync(join(out, summaryFile), 'utf8')) as Json;
    delete summary.raw; // a path in the folder removed below: the runs are kept here instead
    return { argv: ['node', ...argv], summary, runs };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

const get = (object: Json, path: string) => path.split('.').reduce<any>((value, key) => value?.[key], object);

/** The judge's summary points as rows. */
function judgeRows(summary: Json): Row[] {
  return Object.entries(summary.points as Record<string, Json>).map(([key, point]) => {
    const [combo, rate] = key.split('@');
    const [target, mode] = combo.split(':');
    return {
      target,
      label: summary.targets?.[target]?.label ?? target,
      mode: mode as Row['mode'],
      offered: Number(rate),
      runs: point.runs,
      counted: point.runs - point.errors,
      sustains: point.sustains ?? null,
      sent: point.publish_rate_achieved,
      delivered: point.delivered_msgs_per_s,
      p50: point['latency_ms.p50'],
      p99: point['latency_ms.p99'],
      serverCpu: point.server_cpu_pct_of_core,
      nodeCpu: point['server_cpu_split.node'] ?? null,
      postgresCpu: point['server_cpu_split.postgres'] ?? null,
      lost: point.lost,
      refused: point.refused,
      othersCpu: point['foreign.foreign_cpu_pct_of_core_less_postgres'] ?? null,
    };
  });
}

// ------------------------------------------------------------------ bare ws fan-out

/** --runs runs per rate, each on a fresh baseline-ws.mjs (CPU 0) with ws-load.mjs --mode fanout (CPU 1). */
async function runBareWs(): Promise<Record<number, RunResult[]>> {
  const monitor = await sysmon();
  const byRate: Record<number, RunResult[]> = Object.fromEntries(settings.rates.map((rate) => [rate, []]));
  for (let run = 0; run < settings.runs; run++) {
    for (const rate of settings.rates) {
      const anchor = await anchorServer(['baseline-ws.mjs']);
      running.add(anchor.stop);
      try {
        const quiet = await monitor.waitQuiet({ maxPct: 5, maxWaitS: settings.quietWaitS });
        const before = monitor.snapshot();
        const args = [join(ANCHORS, 'ws-load.mjs'), '--mode', 'fanout', '--url', `${anchor.url.replace(/^http/, 'ws')}/ws`, '--conns', String(settings.wsConns)];
        args.push('--rate', String(rate), '--duration', String(settings.durationS), '--warmup', String(settings.warmupS));
        args.push('--payload-bytes', String(settings.wsPayloadBytes), '--server-pid', String(anchor.pid));
        const result = (await loadOnCpu1<RunResult>(args, ANCHORS)) as RunResult;
        const foreign = monitor.foreignCpu(before, monitor.snapshot());
        Object.assign(result, { rate, run: run + 1, quiet_wait_s: quiet.waited_s, foreign_cpu_pct_of_core: foreign.foreign_cpu_pct_of_core, foreign_top: foreign.foreign_top });
        result.clean = !result.error && foreign.foreign_cpu_pct_of_core < settings.cleanMaxPct;
        byRate[rate].push(result);
        const disturbed = result.clean ? '' : ` (disturbed: foreign ${foreign.foreign_cpu_pct_of_core}% of a core)`;
        const said = result.error ?? `sent ${result.publish_rate_achieved}/s delivered ${result.delivered_msgs_per_s}/s p99 ${result.latency_ms?.p99} ms lost ${result.lost_or_late} server ${result.server_cpu_pct_of_core}%`;
        console.error(`bare ws @${rate} run ${run + 1}: ${said}${disturbed}`);
      } finally {
        running.delete(anchor.stop);
        await anchor.stop();
      }
    }
  }
  return byRate;
}

function spread(runs: RunResult[], pick: (run: RunResult) => unknown): Spread | null {
  const numbers = runs.map(pick).filter((value): value is number => typeof value === 'number' && Number.isFinite(value));
  if (!numbers.length) return null;
  return { median: median(numbers)!, min: Math.min(...numbers), max: Math.max(...numbers), n: numbers.length };
}

function wsRows(byRate: Record<number, RunResult[]>): Row[] {
  return Object.entries(byRate).map(([rate, runs]) => {
    const clean = runs.filter((run) => run.clean);
    const counted = clean.length ? clean : runs.filter((run) => !run.error);
    return {
      target: 'ws',
      label: WS_LABEL,
      mode: 'fanout',
      offered: Number(rate),
      runs: runs.length,
      counted: counted.length,
      sustains: null,
      sent: spread(counted, (run) => run.publish_rate_achieved),
      delivered: spread(counted, (run) => run.delivered_msgs_per_s),
      p50: spread(counted, (run) => run.latency_ms?.p50),
      p99: spread(counted, (run) => run.latency_ms?.p99),
      serverCpu: spread(counted, (run) => run.server_cpu_pct_of_core),
      nodeCpu: null,
      postgresCpu: null,
      lost: spread(counted, (run) => run.lost_or_late),
      refused: null,
      othersCpu: spread(counted, (run) => run.foreign_cpu_pct_of_core),
    };
  });
}

// ------------------------------------------------------------------ durability

/**
 * Each target's durability per acknowledged message, from what the judge recorded of it (for
 * voyage-connect: the PostgreSQL settings it read from the database), else as documented in the
 * anchors' RESULTS.md ("Durable push").
 */
function durability(targets: Record<string, Json>, withWs: boolean): Durability[] {
  const list: Durability[] = [];
  for (const [target, info] of Object.entries(targets)) {
    const recorded: string | undefined = info.durability;
    const text = recorded ?? '';
    const label: string = info.label ?? target;
    if (target === 'voyage') {
      const setting = (name: string, fallback: string) => new RegExp(`${name}=(\\w+)`).exec(text)?.[1] ?? fallback;
      const sync = setting('synchronous_commit', 'on');
      const fsync = setting('fsync', 'on');
      const method = setting('wal_sync_method', 'fdatasync');
      const flushed = fsync === 'on' && sync !== 'off';
      const disk = flushed
        ? `WAL flushed (${method}) by the COMMIT, before the 202; one flush carries the publishes queued meanwhile (group commit)`
        : fsync === 'off'
          ? 'WAL written but never forced to disk (fsync=off)'
          : 'WAL flushed by the WAL writer after the 202 (synchronous_commit=off: within 3 × wal_writer_delay)';
      list.push({
        target,
        label,
        version: `${info.version ?? label}${info.pg ? `, PostgreSQL ${String(info.pg).split(' ')[0]}` : ''}`,
        ack: `202 after the PostgreSQL COMMIT of the publish (synchronous_commit=${sync}, fsync=${fsync}, wal_sync_method=${method})`,
        disk,
        fsyncBeforeAck: flushed,
        short: flushed ? 'after the WAL fsync of its PostgreSQL COMMIT' : fsync === 'off' ? 'committed, never fsynced (fsync=off)' : 'before the WAL flush (synchronous_commit=off)',
        recorded,
      });
    } else if (target === 'nats') {
      const every = /every (\d+) s/.exec(text)?.[1] ?? '60';
      list.push({
        target,
        label,
        version: info.version ?? 'nats-server',
        ack: "after the append to the stream's write buffer in the server's memory",
        disk: `written to the block file within ~8 ms; fsync every ${every} s`,
        fsyncBeforeAck: false,
        short: `in memory, fsync every ${every} s`,
        recorded,
      });
    } else if (target === 'mosquitto') {
      const every = /autosave_interval (\d+)/.exec(text)?.[1] ?? '1800';
      list.push({
        target,
        label,
        version: info.version ?? 'mosquitto',
        ack: "PUBACK after queuing in the broker's memory",
        disk: `the whole database saved (fsync + rename) every autosave_interval = ${Number(every).toLocaleString('en')} s and at shutdown`,
        fsyncBeforeAck: false,
        short: `in memory, whole store saved every ${Number(every).toLocaleString('en')} s`,
        recorded,
      });
    } else {
      list.push({ target, label, version: info.version ?? '', ack: recorded ?? '—', disk: '—', fsyncBeforeAck: false, short: '', recorded });
    }
  }
  if (withWs) {
    list.push({ target: 'ws', label: WS_LABEL, version: `ws ${wsVersion()} (baseline-ws.mjs)`, ack: 'none: sent and forgotten', disk: 'nothing stored', fsyncBeforeAck: false, short: 'no ack, nothing stored' });
  }
  return list.sort((a, b) => TARGET_ORDER.indexOf(a.target) - TARGET_ORDER.indexOf(b.target));
}

function wsVersion() {
  try {
    return JSON.parse(readFileSync(join(ANCHORS, 'node_modules/ws/package.json'), 'utf8')).version as string;
  } catch {
    return '';
  }
}

// ------------------------------------------------------------------ report

const sortRows = (rows: Row[]) =>
  [...rows].sort(
    (a, b) => TARGET_ORDER.indexOf(a.target) - TARGET_ORDER.indexOf(b.target) || MODE_ORDER.indexOf(a.mode) - MODE_ORDER.indexOf(b.mode) || a.offered - b.offered,
  );

const modeName = (row: Pick<Row, 'mode'>, batch: number) => (row.mode === 'batch' ? `batch ${batch}` : row.mode === 'fanout' ? 'fan-out' : 'single');

function show(stat: Spread | null | undefined, digits = 0) {
  if (!stat) return '—';
  const f = (value: number) => value.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });
  return stat.n > 1 && f(stat.min) !== f(stat.max) ? `${f(stat.median)} (${f(stat.min)}–${f(stat.max)})` : f(stat.median);
}

function printReport(rows: Row[], durable: Durability[], meta: { runs: number; batch: number; replay?: Json; subtitle: string[] }) {
  console.log('**Durability per acknowledged message** (read from what the judge recorded)\n');
  console.log('| target | version | the ack means | on disk | fsync before the ack? |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const d of durable) console.log(`| ${d.label} | ${d.version} | ${d.ack} | ${d.disk} | ${d.fsyncBeforeAck ? '**yes**' : 'no'} |`);
  console.log(`\n**Live push** (${meta.subtitle.join(', ').replace(' · ', '; ')}; median (min–max) of ${meta.runs} run${meta.runs === 1 ? '' : 's'}; latency publish → receipt; server CPU in % of a core, voyage-connect's with its PostgreSQL; others' CPU: what other processes on the machine used meanwhile, % of a core)\n`);
  console.log("| target | mode | offered/s | sent/s | delivered/s | p50 ms | p99 ms | server CPU % | lost | sustains | others' CPU % | runs |");
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const row of sortRows(rows)) {
    const split = row.nodeCpu && row.postgresCpu ? `: node ${show(row.nodeCpu)}, PG ${show(row.postgresCpu)}` : '';
    const refused = row.refused && row.refused.max > 0 ? `; refused ${show(row.refused)}` : '';
    const sustains = row.sustains === null ? '—' : row.sustains ? 'yes' : 'no';
    console.log(
      `| ${row.label} | ${modeName(row, meta.batch)} | ${row.offered.toLocaleString('en')} | ${show(row.sent)} | ${show(row.delivered)} | ${show(row.p50, 1)} | ${show(row.p99, 1)} | ${show(row.serverCpu)}${split} | ${show(row.lost)}${refused} | ${sustains} | ${show(row.othersCpu)} | ${row.counted}/${row.runs} |`,
    );
  }
  const replay = Object.entries(meta.replay ?? {});
  if (replay.length) {
    console.log('\n**Offline replay** (1,000 stored for an offline recipient, then it connects: ms from the connect call to the last message)\n');
    console.log('| target | total ms | open ms | missing | out of order |');
    console.log('| --- | --- | --- | --- | --- |');
    const label = (target: string) => durable.find((d) => d.target === target)?.label ?? target;
    replay.sort(([a], [b]) => TARGET_ORDER.indexOf(a) - TARGET_ORDER.indexOf(b));
    for (const [target, m] of replay) console.log(`| ${label(target)} | ${show(m.total_ms, 1)} | ${show(m.open_ms, 1)} | ${show(m.missing)} | ${show(m.out_of_order)} |`);
  }
}

/** Colour per target, dash per mode; bare ws black and dotted: it is the limit, not a peer. */
const TARGET_COLORS: Record<string, string> = { voyage: '#0072B2', nats: '#009E73', mosquitto: '#D55E00', ws: '#222222' };
const seriesName = (row: Pick<Row, 'label' | 'mode'>, batch: number) => (row.mode === 'fanout' ? `${WS_LABEL} fan-out (physical limit)` : `${row.label} ${modeName(row, batch)}`);

async function chart(file: string, rows: Row[], durable: Durability[], meta: { batch: number; subtitle: string[]; when: string }) {
  const sorted = sortRows(rows);
  const series: ChartSeries[] = [];
  for (const row of sorted) {
    const name = seriesName(row, meta.batch);
    if (series.some((s) => s.name === name)) continue;
    series.push({ name, color: TARGET_COLORS[row.target], dash: row.mode === 'batch' ? [8, 4] : row.mode === 'fanout' ? [2, 3] : undefined });
  }
  const point = (pick: (row: Row) => Spread | null) => (row: Row) => ({ series: seriesName(row, meta.batch), x: row.offered, y: pick(row)?.median, min: pick(row)?.min, max: pick(row)?.max });
  const acks = durable.filter((d) => d.short).map((d) => `${d.label}: ${d.short}`);
  return writeChart(file, {
    title: 'Durable push: delivered rate and p99 latency against offered rate',
    subtitle: [...meta.subtitle, `What an ack means — ${acks.join(' · ')}`, `Median of the runs, vertical bars min–max · ${meta.when}`],
    x: 'offered rate (notifications/s)',
    xTicks: [...new Set(sorted.map((row) => row.offered))].sort((a, b) => a - b),
    series,
    panels: [
      { title: 'Delivered', y: 'delivered (notifications/s)', rows: sorted.map(point((row) => row.delivered)), diagonal: 'delivered = offered' },
      { title: 'p99 latency, publish → receipt', y: 'p99 latency (ms, log scale)', log: true, rows: sorted.map(point((row) => row.p99)), guides: [{ y: 1000, label: '1 s' }] },
    ],
  });
}

const subtitleOf = (recipients: number, batch: number) => [
  `${recipients.toLocaleString('en')} WebSocket subscribers, one recipient each; 605-byte notifications published open-loop`,
  `one per request (single) or ${batch} per request (batch ${batch}) · servers on CPU 0, load generator on CPU 1, PostgreSQL unpinned`,
];

// ------------------------------------------------------------------ entry

/** The stops of everything running now, so a failure or Ctrl-C still ends it all. */
const running = new Set<() => unknown>();

async function main() {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  if (values['chart-from']) return chartFrom(values['chart-from']);
  if (!existsSync(join(ROOT, 'dist/main.js'))) throw new Error('dist/main.js is missing: run `npm run build` first');
  ensureAnchorsInstalled();
  const judge = await runJudge();
  const ws = settings.ws ? await runBareWs() : undefined;
  const rows = sortRows([...judgeRows(judge.summary), ...(ws ? wsRows(ws) : [])]);
  const durable = durability(judge.summary.targets, Boolean(ws));
  const method = judge.summary.method as Json;
  const meta = { runs: settings.runs, batch: method.batch ?? 100, replay: judge.summary.replay, subtitle: subtitleOf(method.recipients ?? 1000, method.batch ?? 100), when: `${judge.summary.when.slice(0, 16).replace('T', ' ')} UTC, ${machine().cpus} CPUs, node ${process.version}` };
  const base = join(ROOT, `bench/results/durable-${stamp}`);
  const svg = await chart(`${base}.svg`, rows, durable, meta);
  const wsArgs = settings.ws
    ? ['ws-load.mjs', '--mode', 'fanout', '--conns', String(settings.wsConns), '--rate', '<R>', '--duration', String(settings.durationS), '--warmup', String(settings.warmupS), '--payload-bytes', String(settings.wsPayloadBytes)]
    : undefined;
  writeFileSync(`${base}.json`, JSON.stringify({ kind: 'durable', machine: machine(), settings, durability: durable, rows, judge, ws: ws && { argv: wsArgs, byRate: ws }, chart: svg }, null, 2));
  printReport(rows, durable, meta);
  console.log(`\n${base}.json\n${svg}`);
}

/** Table and chart again from a results file: ours (durable-<ts>.json) or the judge's own -summary.json. */
async function chartFrom(file: string) {
  const data = JSON.parse(readFileSync(file, 'utf8')) as Json;
  let rows: Row[];
  let durable: Durability[];
  let summary: Json;
  if (data.kind === 'durable') {
    // Rows and durability made again from the runs, as this version of the script makes them.
    summary = data.judge.summary;
    rows = sortRows([...judgeRows(summary), ...(data.ws ? wsRows(data.ws.byRate) : [])]);
    durable = durability(summary.targets, Boolean(data.ws));
  } else if (data.points && data.targets) {
    summary = data;
    rows = judgeRows(summary);
    durable = durability(summary.targets, false);
  } else {
    throw new Error(`${file}: neither a bench/results/durable-*.json nor a durable-push.mjs summary`);
  }
  const method = summary.method as Json;
  const runs = Math.max(...rows.map((row) => row.runs));
  const meta = { runs, batch: method.batch ?? 100, replay: summary.replay, subtitle: subtitleOf(method.recipients ?? 1000, method.batch ?? 100), when: `${String(summary.when).slice(0, 16).replace('T', ' ')} UTC, ${summary.host?.cpus ?? '?'} CPUs, node ${summary.host?.node ?? '?'}` };
  const out = values['chart-out'] ? resolve(values['chart-out']) : join(ROOT, 'bench/results', `${basename(file).replace(/(-summary)?\.json$/, '')}.svg`);
  const svg = await chart(out, rows, durable, meta);
  printReport(rows, durable, meta);
  console.log(`\n${svg}`);
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`${signal}: stopping`);
    void Promise.allSettled([...running].map((stop) => stop())).finally(() => process.exit(130));
  });
}

await main();
