/**
 * `npm run bench`: the HTTP scenarios beside their anchors from ../shared/anchors, with the
 * anchors' harness and settings — server on CPU 0, load generator on CPU 1 (taskset), autocannon
 * `-c 50 -d 10` after a warm-up, several runs interleaved, a quiet-machine check before each run.
 * The ratio to the anchor measured in the same run is the result; absolute figures are context.
 *
 *   npm run bench [-- --runs 3] [--duration 10] [--only token,token-rs256,poll,poll-1m,refresh,code]
 *                 [--sweep 1,4,16,64,256] (concurrency sweep of token and refresh; --sweep '' skips it)
 *
 * Writes bench/results/<timestamp>.json and prints the tables. The WebSocket scenarios are in
 * bench/websocket.ts.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type BenchClient, fillAuthorizations, mintCodes, refreshTokens } from './lib/fixtures.js';
import { ANCHORS, anchorServer, loadOnCpu1, machine, ROOT, type RunningService, startService, sysmon } from './lib/harness.js';

const { values: opt } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    only: { type: 'string', default: 'token,token-rs256,poll,poll-1m,refresh,code' },
    sweep: { type: 'string', default: '1,4,16,64,256' },
    'clean-max': { type: 'string', default: '10' },
  },
});

/** One JSON line of a load generator (bench-token.mjs or load/token-grants.ts). */
interface LoadResult {
  req_per_s?: number;
  latency_ms?: { p50: number; p99: number };
  unexpected_status_count?: number;
  errors?: number;
  chains_broken?: number;
  error?: string;
  clean?: boolean;
  [key: string]: unknown;
}

/**
 * Starts what one measured run needs; returns the load generator's arguments, how to undo it, and
 * the service measured when it is not the shared one (its PostgreSQL's CPU is counted as ours).
 */
type Variant = (connections: string) => Promise<{ load: string[]; cwd?: string; service?: RunningService; stop?: () => Promise<void> }>;

interface Scenario {
  id: string;
  title: string;
  target: string;
  ours: Variant;
  anchor?: Variant;
  met(ours: Summary, ratio: number | null): boolean;
}

type Summary = ReturnType<typeof summarise>;

const BENCH_TOKEN = join(ANCHORS, 'bench-token.mjs');
const TOKEN_GRANTS = ['--import', 'tsx', join(ROOT, 'bench/load/token-grants.ts')];

async function main() {
  const monitor = await sysmon();
  const selected = opt.only.split(',');
  const services: RunningService[] = [];
  try {
    const scenarios = await buildScenarios(selected, services);
    const measure = async (scenario: Scenario, side: 'ours' | 'anchor', connections: string, service?: RunningService) => {
      const prepared = await scenario[side]!(connections);
      await monitor.waitQuiet({ maxPct: 5, maxWaitS: 60 });
      const before = monitor.snapshot();
      const result = (await loadOnCpu1<LoadResult>(prepared.load, prepared.cwd)) as LoadResult;
      const after = monitor.snapshot();
      await prepared.stop?.();
      // The service's PostgreSQL is daemonised (outside our process tree) but is part of what is measured.
      const measuredService = prepared.service ?? service;
      const ownDatabase = side === 'ours' && measuredService ? measuredService.databaseCpuPct(before, after) : 0;
      result.database_cpu_pct_of_core = ownDatabase;
      const foreign = monitor.foreignCpu(before, after).foreign_cpu_pct_of_core - ownDatabase;
      // A run with wrong statuses, socket errors or broken chains measured something else: it never counts.
      const wrong = (result.unexpected_status_count ?? 0) + (result.errors ?? 0) + (result.chains_broken ?? 0);
      if (wrong > 0 && !result.error) result.error = `${wrong} unexpected responses, errors or broken chains`;
      result.clean = !result.error && foreign < Number(opt['clean-max']);
      console.error(`${scenario.id} ${side} -c ${connections}: ${result.req_per_s ?? result.error} req/s${result.clean ? '' : ' (disturbed)'}`);
      return result;
    };

    const results: Record<string, { ours: LoadResult[]; anchor: LoadResult[] }> = {};
    for (let runIndex = 0; runIndex < Number(opt.runs); runIndex++) {
      for (const scenario of scenarios) {
        results[scenario.id] ??= { ours: [], anchor: [] };
        // Interleave: ours and the anchor alternate, so drift on the machine hits both alike.
        const sides = scenario.anchor ? (runIndex % 2 === 0 ? (['ours', 'anchor'] as const) : (['anchor', 'ours'] as const)) : (['ours'] as const);
        for (const side of sides) results[scenario.id][side].push(await measure(scenario, side, opt.connections, services[0]));
      }
    }

    // How cost grows with concurrency: one run per level, ours and the anchor side by side.
    const sweep: Record<string, { connections: number; ours: LoadResult; anchor?: LoadResult }[]> = {};
    const levels = opt.sweep.split(',').filter(Boolean);
    for (const scenario of scenarios.filter((candidate) => levels.length > 0 && ['token', 'refresh'].includes(candidate.id))) {
      sweep[scenario.id] = [];
      for (const level of levels) {
        const ours = await measure(scenario, 'ours', level, services[0]);
        const anchor = scenario.anchor ? await measure(scenario, 'anchor', level) : undefined;
        sweep[scenario.id].push({ connections: Number(level), ours, anchor });
      }
    }
    report(scenarios, results, sweep);
  } finally {
    for (const service of services) await service.stop();
  }
}

async function buildScenarios(selected: string[], services: RunningService[]): Promise<Scenario[]> {
  const service = await startService();
  services.push(service);
  const client: BenchClient = await service.cli('client:create', '--name', 'bench-device', '--grant', 'client_credentials', '--grant', 'authorization_code', '--grant', 'refresh_token');
  const duration = ['-d', opt.duration];
  const tokenLoad = (base: string, who: BenchClient) => [
    BENCH_TOKEN,
    '--url',
    `${base}/public/api/oauth2/token`,
    '--client-id',
    who.client_id,
    '--client-secret',
    who.client_secret,
    '--scope',
    'notification:subscribe',
    ...duration,
  ];
  const oidcAnchor = (alg: string): Variant => async (connections) => {
    const anchor = await anchorServer(['oidc-provider-server.mjs', '--alg', alg, '--quiet']);
    return { load: [BENCH_TOKEN, '--url', `${anchor.url}/token`, '-c', connections, ...duration, '--pid', String(anchor.pid)], stop: anchor.stop };
  };
  // Each poll run gets a service of its own whose sign-in table holds `rows` collected sign-ins.
  // It polls one state as fast as it can, so the minimum interval is off: the full 404 path, not the 429.
  const pollService = (rows: number): Variant => async (connections) => {
    const poller = await startService({ CODE_POLL_MIN_INTERVAL: '0' });
    const device: BenchClient = await poller.cli('client:create', '--name', 'bench-poller', '--grant', 'authorization_code');
    await fillAuthorizations(poller, device, rows);
    const config = (await (await fetch(`${poller.base}/external/oauth2helper/config/${device.client_id}`, { method: 'POST' })).json()) as { code_url: string };
    return { load: [BENCH_TOKEN, '--url', config.code_url, '--method', 'GET', '--expect', '404', '-c', connections, ...duration, '--pid', String(poller.pid)], service: poller, stop: poller.stop };
  };
  const fastifyAnchor: Variant = async (connections) => {
    const anchor = await anchorServer(['baseline-fastify.mjs']);
    return { load: [BENCH_TOKEN, '--url', `${anchor.url}/missing`, '--method', 'GET', '--expect', '404', '-c', connections, ...duration, '--pid', String(anchor.pid)], stop: anchor.stop };
  };
  const grantsFile = (grants: string[]) => {
    const file = join(mkdtempSync(join(tmpdir(), 'voyage-connect-grants-')), 'grants.json');
    writeFileSync(file, JSON.stringify(grants));
    return file;
  };
  const grantLoad = (mode: 'refresh' | 'code', file: string, connections: string) => [
    ...TOKEN_GRANTS,
    '--mode',
    mode,
    '--url',
    `${service.base}/sso/token`,
    '--client-id',
    client.client_id,
    '--client-secret',
    client.client_secret,
    '--grants',
    file,
    '-c',
    connections,
    ...duration,
    '--pid',
    String(service.pid),
  ];
  const atLeast = (rps: number, p99: number) => (ours: Summary) => (ours.median ?? 0) >= rps && (ours.p99 ?? Infinity) <= p99;

  const scenarios: Scenario[] = [
    {
      id: 'token',
      title: '1 client_credentials, JWT ES256',
      target: '≥ 1.5× node-oidc-provider (ES256)',
      ours: async (connections) => ({ load: [...tokenLoad(service.base, client), '-c', connections, '--pid', String(service.pid)] }),
      anchor: oidcAnchor('ES256'),
      met: (_ours, ratio) => (ratio ?? 0) >= 1.5,
    },
    {
      id: 'token-rs256',
      title: '1 client_credentials, JWT RS256',
      target: '≥ 1.5× node-oidc-provider (RS256)',
      ours: async (connections) => {
        const rs = await startService({ SIGNING_ALG: 'RS256' });
        const rsClient: BenchClient = await rs.cli('client:create', '--name', 'bench-rs256', '--grant', 'client_credentials');
        return { load: [...tokenLoad(rs.base, rsClient), '-c', connections, '--pid', String(rs.pid)], service: rs, stop: rs.stop };
      },
      anchor: oidcAnchor('RS256'),
      met: (_ours, ratio) => (ratio ?? 0) >= 1.5,
    },
    {
      id: 'poll',
      title: '2 code polling, not ready (404), 1 k sign-ins in the table',
      target: '≥ 0.4× bare Fastify GET 404',
      ours: pollService(1_000),
      anchor: fastifyAnchor,
      met: (_ours, ratio) => (ratio ?? 0) >= 0.4,
    },
    {
      id: 'poll-1m',
      title: '2 code polling, not ready, 1 M sign-ins in the table',
      target: '≥ 0.4× bare Fastify GET 404, flat',
      ours: pollService(1_000_000),
      anchor: fastifyAnchor,
      met: (_ours, ratio) => (ratio ?? 0) >= 0.4,
    },
    {
      id: 'refresh',
      title: '3 refresh_token rotation at /sso/token',
      target: '≥ 2,000/s, p99 ≤ 50 ms, no lost or double rotation',
      ours: async (connections) => ({ load: grantLoad('refresh', grantsFile(await refreshTokens(service, client, 2 * Number(connections))), connections), cwd: ROOT }),
      met: atLeast(2000, 50),
    },
    {
      id: 'code',
      title: '4 authorization_code exchange at /sso/token',
      target: '≥ 2,000/s, p99 ≤ 50 ms',
      // Enough single-use codes for the warm-up and the run at well above the target rate.
      ours: async (connections) => ({ load: grantLoad('code', grantsFile(await mintCodes(service, client, 8_000 * (Number(opt.duration) + 3))), connections), cwd: ROOT }),
      met: atLeast(2000, 50),
    },
  ];
  return scenarios.filter((scenario) => selected.includes(scenario.id));
}

function report(
  scenarios: Scenario[],
  results: Record<string, { ours: LoadResult[]; anchor: LoadResult[] }>,
  sweep: Record<string, { connections: number; ours: LoadResult; anchor?: LoadResult }[]>,
) {
  const rows = scenarios.map((scenario) => {
    const ours = summarise(results[scenario.id].ours);
    const anchor = scenario.anchor ? summarise(results[scenario.id].anchor) : undefined;
    const ratio = ours.median && anchor?.median ? ours.median / anchor.median : null;
    return { id: scenario.id, scenario: scenario.title, target: scenario.target, ours, anchor, ratio, met: scenario.met(ours, ratio) };
  });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  const file = join(ROOT, `bench/results/${stamp}.json`);
  writeFileSync(file, JSON.stringify({ machine: machine(), settings: opt, rows, sweep, raw: results }, null, 2));

  console.log('| scenario | voyage-connect req/s, median (min–max) | p99 ms | anchor req/s, median (min–max) | p99 ms | ratio | target | met | clean runs |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) {
    const anchorCells = row.anchor ? `${fmt(row.anchor)} | ${row.anchor.p99 ?? '—'}` : '— | —';
    const clean = `${row.ours.clean}/${row.ours.runs}${row.anchor ? `, ${row.anchor.clean}/${row.anchor.runs}` : ''}`;
    console.log(`| ${row.scenario} | ${fmt(row.ours)} | ${row.ours.p99 ?? '—'} | ${anchorCells} | ${row.ratio ? `${row.ratio.toFixed(2)}×` : '—'} | ${row.target} | ${row.met ? 'yes' : 'no'} | ${clean} |`);
  }
  for (const [id, levels] of Object.entries(sweep)) {
    console.log(`\n${id}: req/s and p99 against concurrency (one run each)\n`);
    console.log('| connections | voyage-connect req/s | p99 ms | anchor req/s | p99 ms | ratio |');
    console.log('|---|---|---|---|---|---|');
    for (const level of levels) {
      const ratio = level.anchor?.req_per_s && level.ours.req_per_s ? `${(level.ours.req_per_s / level.anchor.req_per_s).toFixed(2)}×` : '—';
      console.log(`| ${level.connections} | ${cell(level.ours)} | ${level.ours.latency_ms?.p99 ?? '—'} | ${level.anchor ? cell(level.anchor) : '—'} | ${level.anchor?.latency_ms?.p99 ?? '—'} | ${ratio} |`);
    }
  }
  console.log(`\n${file}`);
}

function summarise(runs: LoadResult[]) {
  const clean = runs.filter((result) => result.clean);
  // Disturbed runs count only when no clean one exists (and the table says how many were clean).
  const counted = clean.length ? clean : runs.filter((result) => !result.error);
  const values = counted.map((result) => result.req_per_s).filter((value): value is number => value !== undefined).sort((a, b) => a - b);
  const p99s = counted.map((result) => Number(result.latency_ms?.p99)).filter(Number.isFinite).sort((a, b) => a - b);
  return { median: values[Math.floor(values.length / 2)], min: values[0], max: values.at(-1), p99: p99s[Math.floor(p99s.length / 2)], clean: clean.length, runs: runs.length };
}

const fmt = (summary: { median?: number; min?: number; max?: number }) =>
  summary.median === undefined ? '—' : `${Math.round(summary.median).toLocaleString('en')} (${Math.round(summary.min!)}–${Math.round(summary.max!)})`;
const cell = (result: LoadResult) => (result.req_per_s === undefined ? (result.error ?? '—') : `${result.req_per_s.toLocaleString('en')}${result.clean ? '' : ' (disturbed)'}`);

await main();
