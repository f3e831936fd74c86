/**
 * Publish → push on one instance: holds CONNS stream connections spread over SUBSCRIBERS clients,
 * publishes COUNT notifications over HTTP (CONCURRENCY in flight, recipients round-robin), and
 * reports notifications pushed per second and publish-to-push latency (from the publish request
 * being sent to the message arriving), plus the server's RSS.
 *
 *   npm run build && npx tsx bench/notification-push.ts [--conns 1000] [--subscribers 100] [--count 20000] [--concurrency 64]
 *
 * Starts `node dist/main.js` itself on DATABASE_URL (default: a fresh database on the machine's
 * PostgreSQL at 127.0.0.1:5432) and stops it at the end.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import pg from 'pg';
import WebSocket from 'ws';

const { values } = parseArgs({
  options: {
    conns: { type: 'string', default: '1000' },
    subscribers: { type: 'string', default: '100' },
    count: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '64' },
    'admin-url': { type: 'string', default: process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
  },
});
const CONNS = Number(values.conns);
const SUBSCRIBERS = Number(values.subscribers);
const COUNT = Number(values.count);
const CONCURRENCY = Number(values.concurrency);

const run = promisify(execFile);

async function main() {
  const databaseUrl = await freshDatabase(values['admin-url']);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', LOG_REQUESTS: 'false', WS_MAX_CONNECTIONS: String(CONNS + 10) };
  const service = spawn(process.execPath, ['dist/main.js'], { env, stdio: ['ignore', 'inherit', 'inherit'] });
  try {
    await waitUp(`${base}/health`);
    const publisher = await createClient(env, ['--grant', 'client_credentials', '--scope', 'notification:publish']);
    const subscribers = await Promise.all(Array.from({ length: SUBSCRIBERS }, () => createClient(env, ['--grant', 'client_credentials'])));
    const publishToken = await token(base, publisher, 'notification:publish');
    const subscriberTokens = await Promise.all(subscribers.map((client) => token(base, client)));

    const sentAt = new Map<string, number>();
    const latencies: number[] = [];
    let lastArrival = 0;
    const rssBefore = rss(service);
    const sockets = await Promise.all(
      Array.from({ length: CONNS }, (_, index) => openStream(base, subscriberTokens[index % SUBSCRIBERS], (correlationId) => {
        const sent = sentAt.get(correlationId);
        if (sent !== undefined) latencies.push(performance.now() - sent);
        lastArrival = performance.now();
      })),
    );
    const rssHeld = rss(service);
    const expected = countConnectionsPerRecipient(CONNS, SUBSCRIBERS);

    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < COUNT) {
          const index = next++;
          const recipient = subscribers[index % SUBSCRIBERS].client_id;
          const correlationId = randomUUID();
          sentAt.set(correlationId, performance.now());
          await publish(base, publishToken, recipient, correlationId);
        }
      }),
    );
    const published = performance.now();
    const totalExpected = Array.from({ length: COUNT }, (_, index) => expected[index % SUBSCRIBERS]).reduce((a, b) => a + b, 0);
    const deadline = Date.now() + 30_000;
    while (latencies.length < totalExpected && Date.now() < deadline) await sleep(50);
    for (const socket of sockets) socket.terminate();

    latencies.sort((a, b) => a - b);
    const seconds = (lastArrival - started) / 1000;
    console.log(
      JSON.stringify(
        {
          connections: CONNS,
          subscribers: SUBSCRIBERS,
          notifications: COUNT,
          publishes_per_s: Math.round(COUNT / ((published - started) / 1000)),
          pushes_expected: totalExpected,
          pushes_received: latencies.length,
          pushes_per_s: Math.round(latencies.length / seconds),
          latency_ms: { p50: pct(latencies, 0.5), p90: pct(latencies, 0.9), p99: pct(latencies, 0.99), max: latencies.at(-1)?.toFixed(1) },
          server_rss_mb: { idle: mb(rssBefore), with_connections: mb(rssHeld), per_connection_kb: ((rssHeld - rssBefore) / CONNS / 1024).toFixed(1) },
        },
        null,
        2,
      ),
    );
  } finally {
    service.kill('SIGTERM');
  }
}

function openStream(base: string, accessToken: string, onNotification: (correlationId: string) => void): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${base.replace('http', 'ws')}/voyage/notification/v1/ws/products`, { headers: { Authorization: `Bearer ${accessToken}` } });
    socket.on('open', () => resolve(socket));
    socket.on('error', reject);
    socket.on('message', (data) => onNotification(JSON.parse(data.toString()).correlationId));
  });
}

async function publish(base: string, accessToken: string, recipient: string, correlationId: string) {
  const now = new Date().toISOString();
  const response = await fetch(`${base}/voyage/notification/v1/notifications`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
    body: JSON.stringify({
      recipient,
      correlationId,
      productName: 'RouteAdvice',
      origin: 'bench',
      status: 'New',
      statusTimestamp: now,
      deliverables: [{ productType: 'pdf' }],
      customerReferenceId: 'bench',
      routeCalculationScheduleId: randomUUID(),
      warnings: [],
      creationDate: now,
    }),
  });
  if (response.status !== 202) throw new Error(`publish answered ${response.status}: ${await response.text()}`);
}

async function token(base: string, client: { client_id: string; client_secret: string }, scope?: string): Promise<string> {
  const response = await fetch(`${base}/public/api/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, ...(scope ? { scope } : {}) }),
  });
  return ((await response.json()) as { access_token: string }).access_token;
}

async function createClient(env: NodeJS.ProcessEnv, args: string[]) {
  const { stdout } = await run(process.execPath, ['dist/cli.js', 'client:create', '--name', `bench-${randomUUID()}`, ...args], { env });
  return JSON.parse(stdout) as { client_id: string; client_secret: string };
}

async function freshDatabase(adminUrl: string): Promise<string> {
  const name = `vc_bench_${Date.now()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

const countConnectionsPerRecipient = (conns: number, recipients: number) =>
  Array.from({ length: recipients }, (_, index) => Math.floor(conns / recipients) + (index < conns % recipients ? 1 : 0));
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]?.toFixed(1);
const rss = (child: ChildProcess) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) * 1024;
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitUp(url: string) {
  for (let i = 0; i < 300; i++) {
    if ((await fetch(url).catch(() => null))?.status === 200) return;
    await sleep(100);
  }
  throw new Error(`${url} never answered 200`);
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
