/**
 * `npm run bench`: each scenario beside its anchor from ../shared/anchors, with the anchors' own
 * harness and settings — server on CPU 0, load generator on CPU 1 (taskset), autocannon
 * `-c 50 -d 10` after a warm-up, several runs interleaved, a quiet-machine check before each run.
 * The ratio to the anchor measured in the same run is the result; absolute figures are context.
 *
 *   npm run bench [-- --runs 3] [--duration 10] [--only token,poll]
 *
 * Writes bench/results/<timestamp>.json and prints the table.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import type { Snapshot } from './sysmon-types.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ANCHORS = fileURLToPath(new URL('../../shared/anchors/', import.meta.url));
const SERVER_CPU = '0';
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString()) || 100;
const LOAD_CPU = '1';

const { values: opt } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    only: { type: 'string', default: 'token,poll' },
    'clean-max': { type: 'string', default: '10' },
  },
});

/** One line of bench-token.mjs. */
interface LoadResult {
  req_per_s?: number;
  latency_ms?: { p50: number; p99: number };
  unexpected_status_count?: number;
  errors?: number;
  error?: string;
  clean?: boolean;
  [key: string]: unknown;
}

interface Variant {
  name: string;
  /** Starts the server; returns the load generator's arguments and how to stop it. */
  start(): Promise<{ load: string[]; stop: () => Promise<void> }>;
}

interface Scenario {
  id: string;
  title: string;
  target: string;
  ours: Variant;
  anchor: Variant;
  /** The ratio the target asks for (ours / anchor). */
  minRatio: number;
}

const run = promisify(execFile);
const pinned = (cpu: string, args: string[]) => ['taskset', ['-c', cpu, process.execPath, ...args]] as const;

async function main() {
  ensureAnchorsInstalled();
  const { waitQuiet, snapshot, foreignCpu } = (await import(join(ANCHORS, 'sysmon.mjs'))) as typeof import('./sysmon-types.js');
  const service = await startService();
  try {
    const scenarios = (await buildScenarios(service)).filter((scenario) => opt.only.split(',').includes(scenario.id));
    const results: Record<string, { ours: LoadResult[]; anchor: LoadResult[] }> = {};
    for (let runIndex = 0; runIndex < Number(opt.runs); runIndex++) {
      for (const scenario of scenarios) {
        results[scenario.id] ??= { ours: [], anchor: [] };
        // Interleave: ours and the anchor alternate, so drift on the machine hits both alike.
        for (const side of runIndex % 2 === 0 ? (['ours', 'anchor'] as const) : (['anchor', 'ours'] as const)) {
          const variant = scenario[side];
          const server = await variant.start();
          await waitQuiet({ maxPct: 5, maxWaitS: 60 });
          const before = snapshot();
          const result = await load(server.load);
          const after = snapshot();
          // The service's PostgreSQL is daemonised (outside our process tree) but is part of what is measured.
          const ownDatabase = side === 'ours' ? service.databaseCpuPct(before, after) : 0;
          const foreign = { foreign_cpu_pct_of_core: foreignCpu(before, after).foreign_cpu_pct_of_core - ownDatabase };
          result.database_cpu_pct_of_core = ownDatabase;
          // A run with wrong statuses or socket errors measured something else: it never counts.
          const wrong = (result.unexpected_status_count ?? 0) + (result.errors ?? 0);
          if (wrong > 0 && !result.error) result.error = `${wrong} unexpected responses or errors`;
          result.clean = !result.error && foreign.foreign_cpu_pct_of_core < Number(opt['clean-max']);
          results[scenario.id][side].push(result);
          await server.stop();
          console.error(`${scenario.id} ${side} run ${runIndex + 1}: ${rps(result) ?? result.error} req/s${result.clean ? '' : ' (disturbed)'}`);
        }
      }
    }
    report(scenarios, results);
  } finally {
    await service.stop();
  }
}

/** Our service, built, pinned to CPU 0 with its embedded PostgreSQL (which inherits the pinning). */
async function startService() {
  const dataDir = mkdtempSync(join(tmpdir(), 'voyage-connect-bench-'));
  const port = await freePort();
  const env = {
    ...process.env,
    DATABASE_URL: '',
    DATA_DIR: dataDir,
    EMBEDDED_PG_PORT: String(await freePort()),
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    LOG_REQUESTS: 'false',
    // Scenario 2 polls one state as fast as it can: measure the full 404 path, not the 429.
    CODE_POLL_MIN_INTERVAL: '0',
  };
  const [bin, args] = pinned(SERVER_CPU, [join(ROOT, 'dist/main.js')]);
  const child = spawn(bin, args, { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(`${base}/health`, 200);
  const cli = async (...cliArgs: string[]) => JSON.parse((await run(process.execPath, [join(ROOT, 'dist/cli.js'), ...cliArgs], { env })).stdout);
  const postmaster = Number(readFileSync(join(dataDir, 'postgres/postmaster.pid'), 'utf8').split('\n')[0]);
  return {
    base,
    pid: child.pid!,
    cli,
    /** CPU (% of one core) the service's PostgreSQL (postmaster and its backends) used between two snapshots. */
    databaseCpuPct: (a: Snapshot, b: Snapshot) => {
      const ticks = (snap: Snapshot) =>
        [...snap.procs.values()].filter((proc) => proc.pid === postmaster || proc.ppid === postmaster).reduce((sum, proc) => sum + proc.ticks, 0);
      return Math.round(((ticks(b) - ticks(a)) / CLK_TCK / ((b.t - a.t) / 1000)) * 1000) / 10;
    },
    stop: async () => {
      await stopChild(child);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function buildScenarios(service: Awaited<ReturnType<typeof startService>>): Promise<Scenario[]> {
  const subscriber = await service.cli('client:create', '--name', 'bench-subscriber', '--grant', 'client_credentials', '--grant', 'authorization_code');
  const config = (await (await fetch(`${service.base}/external/oauth2helper/config/${subscriber.client_id}`, { method: 'POST' })).json()) as { code_url: string };
  const ownService = (load: string[]): Variant['start'] => async () => ({ load: [...load, '--pid', String(service.pid)], stop: async () => {} });
  const common = ['-c', opt.connections, '-d', opt.duration];
  return [
    {
      id: 'token',
      title: '1 client_credentials, JWT ES256',
      target: '≥ 1.5× node-oidc-provider (ES256)',
      minRatio: 1.5,
      ours: {
        name: 'voyage-connect /public/api/oauth2/token',
        start: ownService([
          join(ANCHORS, 'bench-token.mjs'),
          '--url',
          `${service.base}/public/api/oauth2/token`,
          '--client-id',
          subscriber.client_id,
          '--client-secret',
          subscriber.client_secret,
          '--scope',
          'notification:subscribe',
          ...common,
        ]),
      },
      anchor: {
        name: 'node-oidc-provider ES256',
        start: () => anchorServer(['oidc-provider-server.mjs', '--alg', 'ES256', '--quiet'], (url, pid) => [join(ANCHORS, 'bench-token.mjs'), '--url', `${url}/token`, ...common, '--pid', pid]),
      },
    },
    {
      id: 'poll',
      title: '2 code polling, not ready (404)',
      target: '≥ 0.4× bare Fastify GET 404',
      minRatio: 0.4,
      ours: {
        name: 'voyage-connect code_url',
        start: ownService([join(ANCHORS, 'bench-token.mjs'), '--url', config.code_url, '--method', 'GET', '--expect', '404', ...common]),
      },
      anchor: {
        name: 'bare Fastify GET /missing',
        start: () =>
          anchorServer(['baseline-fastify.mjs'], (url, pid) => [join(ANCHORS, 'bench-token.mjs'), '--url', `${url}/missing`, '--method', 'GET', '--expect', '404', ...common, '--pid', pid]),
      },
    },
  ];
}

/** An anchor server from ../shared/anchors on CPU 0, ready when it prints `"ready":true`. */
async function anchorServer(args: string[], loadFor: (url: string, pid: string) => string[]) {
  const port = await freePort();
  const [bin, argv] = pinned(SERVER_CPU, [...args, '--port', String(port)]);
  const child = spawn(bin, argv, { cwd: ANCHORS, stdio: ['ignore', 'pipe', 'ignore'] });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk) => {
      output += chunk;
      if (output.includes('"ready":true')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`${args[0]} exited ${code}`)));
  });
  return { load: loadFor(`http://127.0.0.1:${port}`, String(child.pid)), stop: () => stopChild(child) };
}

/** The anchors' load generator (bench-token.mjs) on CPU 1; one JSON line. */
function load(args: string[]): Promise<LoadResult> {
  const [bin, argv] = pinned(LOAD_CPU, args);
  return new Promise((resolve) => {
    const child = spawn(bin, argv, { cwd: ANCHORS, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    child.on('exit', (code) => {
      try {
        resolve(JSON.parse(out.trim().split('\n').pop()!));
      } catch {
        resolve({ error: `exit ${code}: ${err.slice(-300)}` });
      }
    });
  });
}

function report(scenarios: Scenario[], results: Record<string, { ours: LoadResult[]; anchor: LoadResult[] }>) {
  const rows = scenarios.map((scenario) => {
    const ours = summarise(results[scenario.id].ours);
    const anchor = summarise(results[scenario.id].anchor);
    const ratio = ours.median && anchor.median ? ours.median / anchor.median : null;
    return { scenario: scenario.title, target: scenario.target, ours, anchor, ratio, met: ratio !== null && ratio >= scenario.minRatio };
  });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  const file = join(ROOT, `bench/results/${stamp}.json`);
  writeFileSync(file, JSON.stringify({ machine: machine(), settings: opt, rows, raw: results }, null, 2));
  console.log('| scenario | voyage-connect req/s, median (min–max) | p99 ms | anchor req/s, median (min–max) | p99 ms | ratio | target | met | clean runs |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) {
    console.log(
      `| ${row.scenario} | ${fmt(row.ours)} | ${row.ours.p99 ?? '—'} | ${fmt(row.anchor)} | ${row.anchor.p99 ?? '—'} | ${row.ratio?.toFixed(2) ?? '—'}× | ${row.target} | ${row.met ? 'yes' : 'no'} | ${row.ours.clean}/${row.ours.runs}, ${row.anchor.clean}/${row.anchor.runs} |`,
    );
  }
  console.log(`\n${file}`);
}

function summarise(runs: LoadResult[]) {
  const clean = runs.filter((result) => result.clean);
  // Disturbed runs count only when no clean one exists (and the table says how many were clean).
  const counted = clean.length ? clean : runs.filter((result) => !result.error);
  const values = counted.map(rps).filter((value): value is number => value !== undefined).sort((a, b) => a - b);
  const p99s = counted.map((result) => Number(result.latency_ms?.p99)).filter(Number.isFinite).sort((a, b) => a - b);
  return { median: values[Math.floor(values.length / 2)], min: values[0], max: values.at(-1), p99: p99s[Math.floor(p99s.length / 2)], clean: clean.length, runs: runs.length };
}

const rps = (result: LoadResult) => result.req_per_s;
const fmt = (summary: { median?: number; min?: number; max?: number }) =>
  summary.median === undefined ? '—' : `${Math.round(summary.median).toLocaleString('en')} (${Math.round(summary.min!)}–${Math.round(summary.max!)})`;

function machine() {
  return { node: process.version, cpus: execFileSync('nproc').toString().trim(), kernel: execFileSync('uname', ['-r']).toString().trim() };
}

function ensureAnchorsInstalled() {
  if (!existsSync(join(ANCHORS, 'node_modules'))) execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: ANCHORS, stdio: 'inherit' });
}

async function stopChild(child: ChildProcess) {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const force = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(force);
}

async function waitFor(url: string, status: number) {
  for (let attempt = 0; attempt < 600; attempt++) {
    if ((await fetch(url).catch(() => null))?.status === status) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} never answered ${status}`);
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

await main();
