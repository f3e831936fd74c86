/**
 * Load generator for grants that are spent by every request, so one fixed body cannot be
 * replayed: the anchors' bench-token.mjs settings (autocannon, warm-up, -c, -d) with a body per
 * request. Prints ONE JSON line shaped like bench-token.mjs's.
 *
 *   refresh: every connection rotates its own refresh token chain (each response's
 *            refresh_token is the next request's), so a rotation lost or applied twice shows as
 *            a refused request. Ending a timed run would drop the requests in flight and their
 *            tokens, so the warm-up spends chains of its own and the measured run is a request
 *            count sized from the warm-up's rate to last -d seconds; then every chain's last
 *            token is redeemed once more.
 *   code:    every request redeems the next unused authorization code.
 *
 *   node --import tsx bench/load/token-grants.ts --mode refresh --url …/sso/token --client-id … \
 *        --client-secret … --grants grants.json [-c 50] [-d 10] [--warmup 3]
 *
 * grants.json is a JSON array of refresh tokens (refresh: 2 × -c) or codes (code: enough for
 * warm-up and run).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';

const { values: opt } = parseArgs({
  options: {
    mode: { type: 'string', default: 'refresh' },
    url: { type: 'string' },
    'client-id': { type: 'string' },
    'client-secret': { type: 'string' },
    grants: { type: 'string' },
    connections: { type: 'string', short: 'c', default: '50' },
    duration: { type: 'string', short: 'd', default: '10' },
    warmup: { type: 'string', default: '3' },
    pid: { type: 'string' },
  },
});

/** CPU seconds the server process has used (utime + stime from /proc). */
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString()) || 100;
const serverCpuSeconds = () => {
  if (!opt.pid) return 0;
  const stat = readFileSync(`/proc/${opt.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
};

const refresh = opt.mode === 'refresh';
const grants: string[] = JSON.parse(readFileSync(opt.grants!, 'utf8'));
const connections = Number(opt.connections);
if (refresh && grants.length < 2 * connections) throw new Error(`need ${2 * connections} refresh tokens, got ${grants.length}`);
/** What the next request spends: codes, or the chains' current refresh tokens. */
let available = refresh ? grants.slice(connections) : grants;

const form = (grant: string) =>
  new URLSearchParams({
    ...(refresh ? { grant_type: 'refresh_token', refresh_token: grant } : { grant_type: 'authorization_code', code: grant }),
    client_id: opt['client-id']!,
    client_secret: opt['client-secret']!,
  }).toString();

let exhausted = 0;
const statuses = new Map<number, number>();

const run = (length: { duration: number } | { amount: number }) =>
  autocannon({
    url: opt.url!,
    connections,
    ...length,
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        setupRequest: (request) => {
          const grant = available.shift();
          if (grant === undefined) exhausted++;
          return { ...request, body: form(grant ?? 'none-left') };
        },
        onResponse: (status, body) => {
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          // A chain goes on with the token this rotation issued.
          if (refresh && status === 200) available.push((JSON.parse(body) as { refresh_token: string }).refresh_token);
        },
      },
    ],
  });

const duration = Number(opt.duration);
let warmupRate = 0;
if (Number(opt.warmup) > 0) {
  const warmup = await run({ duration: Number(opt.warmup) });
  warmupRate = (statuses.get(200) ?? 0) / warmup.duration;
}
statuses.clear();
if (refresh) available = grants.slice(0, connections);
const cpuBefore = serverCpuSeconds();
const result = await run(refresh ? { amount: Math.max(connections * 10, Math.round(warmupRate * duration)) } : { duration });
const serverCpuPct = opt.pid ? Math.round(((serverCpuSeconds() - cpuBefore) / result.duration) * 1000) / 10 : undefined;
const ok = statuses.get(200) ?? 0;
const total = [...statuses.values()].reduce((sum, count) => sum + count, 0);

// Every chain's last token must still work exactly once: a rotation that answered 200 but was
// not stored, or stored twice, breaks its chain here.
let chainsBroken = 0;
if (refresh) {
  const last = available.splice(0);
  const checks = await Promise.all(
    last.map((token) => fetch(opt.url!, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form(token) })),
  );
  chainsBroken = checks.filter((response) => response.status !== 200).length;
}

console.log(
  JSON.stringify({
    mode: opt.mode,
    url: opt.url,
    connections,
    duration_s: result.duration,
    req_per_s: Math.round(ok / result.duration),
    latency_ms: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, avg: result.latency.average, max: result.latency.max },
    total,
    expected_count: ok,
    unexpected_status_count: total - ok,
    status_codes: Object.fromEntries(statuses),
    errors: result.errors + exhausted,
    grants_exhausted: exhausted,
    chains_broken: chainsBroken,
    server_cpu_pct_of_core: serverCpuPct,
    node: process.version,
  }),
);
