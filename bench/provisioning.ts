/**
 * `npm run bench:provisioning`: what provisioning from software costs a caller, one request at a
 * time, against the built service on CPU 0 with its embedded PostgreSQL and shipped logging:
 *
 * - a registration (POST /sso/register: validation, the burst count, the insert, the audit row,
 *   the secret and the registration access token made and hashed), 200 in a row;
 * - a page of the admin API's client list (GET /admin/v1/clients?limit=100&after=…) at 10,000
 *   clients, 500 pages from random places, and the first 1,000 in one page.
 *
 *   npm run bench:provisioning [-- --registrations 200 --clients 10000 --pages 500]
 *
 * Prints p50/p99 in milliseconds and writes bench/results/provisioning-<timestamp>.json.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { machine, ROOT, startService } from './lib/harness.js';

const { values: opt } = parseArgs({
  options: {
    registrations: { type: 'string', default: '200' },
    clients: { type: 'string', default: '10000' },
    pages: { type: 'string', default: '500' },
  },
});

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const summary = (times: number[]) => {
  const sorted = [...times].sort((a, b) => a - b);
  return { count: sorted.length, p50_ms: round(percentile(sorted, 50)), p99_ms: round(percentile(sorted, 99)), max_ms: round(sorted.at(-1)!) };
};
const round = (ms: number) => Math.round(ms * 100) / 100;

async function timed(work: () => Promise<Response>, expected: number): Promise<number> {
  const started = performance.now();
  const response = await work();
  await response.arrayBuffer();
  const elapsed = performance.now() - started;
  if (response.status !== expected) throw new Error(`answered ${response.status}, expected ${expected}`);
  return elapsed;
}

async function token(base: string, client: { client_id: string; client_secret: string }, scope: string): Promise<string> {
  const response = await fetch(`${base}/public/api/oauth2/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, scope }),
  });
  return ((await response.json()) as { access_token: string }).access_token;
}

const service = await startService({ REGISTRATION_RATE_LIMIT: '100000' });
try {
  const registrar = await service.cli('client:create', '--name', 'bench-registrar', '--grant', 'client_credentials', '--scope', 'clients:register');
  const admin = await service.cli('client:create', '--name', 'bench-admin', '--grant', 'client_credentials', '--scope', 'admin:read');
  const registerToken = await token(service.base, registrar, 'clients:register');
  const adminToken = await token(service.base, admin, 'admin:read');

  // Warm-up, then the registrations measured one after another.
  const register = (index: number) => () =>
    fetch(`${service.base}/sso/register`, {
      method: 'POST',
      headers: { authorization: `Bearer ${registerToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: `bench device ${index}`, voyage_redirect_patterns: ['http://192.168.0.0/16:*/callback'], scope: 'notification:subscribe' }),
    });
  for (let index = 0; index < 20; index++) await timed(register(-1 - index), 201);
  const registrations: number[] = [];
  for (let index = 0; index < Number(opt.registrations); index++) registrations.push(await timed(register(index), 201));

  // Up to the client count with the CLI's bulk create, a thousand per file (its answer holds every secret).
  const missing = Math.max(0, Number(opt.clients) - (Number(opt.registrations) + 22));
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  const file = join(ROOT, 'bench/results', `provisioning-clients-${process.pid}.jsonl`);
  for (let made = 0; made < missing; made += 1000) {
    const lines = Array.from({ length: Math.min(1000, missing - made) }, (_, index) => JSON.stringify({ name: `bench bulk ${made + index}` }));
    writeFileSync(file, lines.join('\n'));
    await service.cli('client:create', '--file', file);
  }
  rmSync(file, { force: true });

  const list = (after?: string, limit = 100) => () =>
    fetch(`${service.base}/admin/v1/clients?limit=${limit}${after ? `&after=${after}` : ''}`, { headers: { authorization: `Bearer ${adminToken}` } });
  const ids: string[] = [];
  for (let after: string | undefined; ; ) {
    const page = (await (await list(after, 1000)()).json()) as { client_id: string }[];
    ids.push(...page.map((client) => client.client_id));
    if (page.length < 1000) break;
    after = page.at(-1)!.client_id;
  }
  for (let index = 0; index < 20; index++) await timed(list(ids[Math.floor(Math.random() * ids.length)]), 200);
  const pages: number[] = [];
  for (let index = 0; index < Number(opt.pages); index++) pages.push(await timed(list(ids[Math.floor(Math.random() * ids.length)]), 200));
  const bigPages: number[] = [];
  for (let index = 0; index < 50; index++) bigPages.push(await timed(list(undefined, 1000), 200));

  const result = {
    machine: machine(),
    node: process.version,
    clients: ids.length,
    registration: summary(registrations),
    admin_list_page_of_100: summary(pages),
    admin_list_page_of_1000: summary(bigPages),
  };
  console.log(JSON.stringify(result, null, 2));
  writeFileSync(join(ROOT, 'bench/results', `provisioning-${new Date().toISOString().replaceAll(':', '-')}.json`), `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await service.stop();
}
