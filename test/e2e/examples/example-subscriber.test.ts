import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { freePort } from '../../setup/free-port.js';
import { examplesRunning, runToEnd, spawnExample } from '../../setup/run-example.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const EXAMPLE = fileURLToPath(new URL('../../../examples/notification-subscriber.ts', import.meta.url));

async function token(app: TestApp, client: TestClient, scope?: string): Promise<string> {
  const response = await fetch(`${app.baseUrl}/public/api/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret, ...(scope ? { scope } : {}) }),
  });
  return ((await response.json()) as { access_token: string }).access_token;
}

async function publish(app: TestApp, publisher: TestClient, recipient: string): Promise<string> {
  const correlationId = randomUUID();
  const now = new Date().toISOString();
  const response = await fetch(`${app.baseUrl}/voyage/notification/v1/notifications`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${await token(app, publisher, 'notification:publish')}` },
    body: JSON.stringify({
      recipient,
      correlationId,
      productName: 'RouteAdvice',
      origin: 'RouteConfigurationService',
      status: 'New',
      statusTimestamp: now,
      deliverables: [{ productType: 'pdf' }],
      customerReferenceId: 'voyage-42',
      routeCalculationScheduleId: randomUUID(),
      warnings: [],
      creationDate: now,
    }),
  });
  expect(response.status).toBe(202);
  return correlationId;
}

describe('examples/notification-subscriber.ts', () => {
  let port: number;
  let app: TestApp;
  let subscriber: TestClient;
  let publisher: TestClient;
  let output = '';
  let stop: () => void;

  const seen = (pattern: RegExp | string, timeoutMs = 12_000) =>
    expect.poll(() => (typeof pattern === 'string' ? output.includes(pattern) : pattern.test(output)), { timeout: timeoutMs, interval: 100 }).toBe(true);
  const count = (text: string) => output.split(text).length - 1;

  beforeAll(async () => {
    port = await freePort();
    app = await startTestApp({ PORT: String(port), CLIENT_TOKEN_TTL: '5' });
    subscriber = await createClient(app, { grants: ['client_credentials'] });
    publisher = await createClient(app, { grants: ['client_credentials'], scopes: ['notification:publish'] });
    const child = spawnExample(EXAMPLE, ['--api', app.baseUrl], {
      env: { PATH: process.env.PATH, CLIENT_ID: subscriber.id, CLIENT_SECRET: subscriber.secret },
    });
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    stop = () => child.kill('SIGKILL');
  });
  afterAll(async () => {
    stop?.();
    await app?.close();
  });

  it('receives notifications, gets a new token on 4003 and reconnects after a 1001 restart', async () => {
    await seen('connected (protocol v1)');
    const first = await publish(app, publisher, subscriber.id);
    await seen(first);

    // CLIENT_TOKEN_TTL=5: the server closes with 4003, the example gets a new token and is back in 1 s.
    await seen('the token expired: a new one, then 1 s; reconnecting in 1.0 s');
    await expect.poll(() => count('connected'), { timeout: 5_000, interval: 100 }).toBe(2);
    const second = await publish(app, publisher, subscriber.id);
    await seen(second);

    // A restart: 1001 to every connection, then the example reconnects to the new instance.
    const databaseUrl = app.databaseUrl;
    await app.close();
    await seen(/the instance is stopping: reconnecting at once; reconnecting in \d\.\d s/);
    app = await startTestApp({ PORT: String(port), CLIENT_TOKEN_TTL: '5' }, databaseUrl);
    const third = await publish(app, publisher, subscriber.id);
    await seen(third, 20_000);
    // Nothing was delivered twice across the reconnects.
    for (const correlationId of [first, second, third]) expect(count(correlationId)).toBe(1);
  }, 40_000);

  // The SDK's token request waits out a restart of the service: it says so once it gave up, about 30 s on.
  it('reads PORT when no --api is given, and names the address it cannot reach', async () => {
    const closedPort = await freePort();
    const child = spawnExample(EXAMPLE, [], { env: { PATH: process.env.PATH, CLIENT_ID: 'x', CLIENT_SECRET: 'y', PORT: String(closedPort) } });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    try {
      await expect.poll(() => output, { timeout: 50_000, interval: 250 }).toContain(`cannot reach http://localhost:${closedPort} (`);
    } finally {
      child.kill();
    }
  }, 60_000);
});

describe('examples/notification-subscriber.ts with --protocol v2 and with --sse', () => {
  let app: TestApp;
  let publisher: TestClient;
  const children: (() => void)[] = [];

  beforeAll(async () => {
    // Tokens of 10 s: v2 replaces its token in band, SSE reconnects with a new one.
    app = await startTestApp({ CLIENT_TOKEN_TTL: '10' });
    publisher = await createClient(app, { grants: ['client_credentials'], scopes: ['notification:publish'] });
  });
  afterAll(async () => {
    for (const stop of children) stop();
    await app?.close();
  });

  it('leaves no subscriber running once the test has stopped the ones it started', async () => {
    const subscriber = await createClient(app, { grants: ['client_credentials'] });
    const out = run(['--sse'], subscriber);
    await expect.poll(() => out.text, { timeout: 12_000 }).toContain('connected (server-sent events)');
    for (const stop of children.splice(0)) stop();
    await expect.poll(() => examplesRunning(EXAMPLE, app.baseUrl), { timeout: 5_000 }).toBe(0);
  });

  function run(args: string[], subscriber: TestClient) {
    const child = spawnExample(EXAMPLE, ['--api', app.baseUrl, ...args], {
      env: { PATH: process.env.PATH, CLIENT_ID: subscriber.id, CLIENT_SECRET: subscriber.secret },
    });
    const out = { text: '', child, exited: once(child, 'close').then(([code]) => code as number | null) };
    child.stdout.on('data', (chunk) => (out.text += chunk));
    child.stderr.on('data', (chunk) => (out.text += chunk));
    children.push(() => child.kill('SIGKILL'));
    return out;
  }

  it('v2: prints and acknowledges, and replaces its expiring token without reconnecting', async () => {
    const subscriber = await createClient(app, { grants: ['client_credentials'] });
    const out = run(['--protocol', 'v2'], subscriber);
    await expect.poll(() => out.text, { timeout: 12_000 }).toContain('connected (protocol v2)');
    const first = await publish(app, publisher, subscriber.id);
    await expect.poll(() => out.text, { timeout: 5_000 }).toContain(first);
    // Past the first token's 10 s: a token not replaced in time would have ended the stream with 4003 (and a reconnect).
    await sleep(12_000);
    const second = await publish(app, publisher, subscriber.id);
    await expect.poll(() => out.text, { timeout: 5_000 }).toContain(second);
    expect(out.text).not.toContain('token expired');
    expect(out.text).not.toContain('reconnecting');
    expect(out.text.split('connected (protocol v2)').length - 1).toBe(1);
    for (const correlationId of [first, second]) expect(out.text.split(correlationId).length - 1).toBe(1);
  }, 40_000);

  it('--sse: prints notifications as server-sent events, reconnecting with a new token and Last-Event-ID when its token expires', async () => {
    const subscriber = await createClient(app, { grants: ['client_credentials'] });
    const out = run(['--sse'], subscriber);
    await expect.poll(() => out.text, { timeout: 12_000 }).toContain('connected (server-sent events)');
    const first = await publish(app, publisher, subscriber.id);
    await expect.poll(() => out.text, { timeout: 5_000 }).toContain(first);
    await expect.poll(() => out.text, { timeout: 15_000 }).toContain('the token expired: a new one, then 1 s; reconnecting in 1.0 s');
    await expect.poll(() => out.text.split('connected (server-sent events)').length - 1, { timeout: 10_000 }).toBe(2);
    const second = await publish(app, publisher, subscriber.id);
    await expect.poll(() => out.text, { timeout: 5_000 }).toContain(second);
    for (const correlationId of [first, second]) expect(out.text.split(correlationId).length - 1).toBe(1);
  }, 45_000);

  it('--sse --state FILE: stopped and started again, goes on after the last notification it printed, printing nothing twice', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'example-subscriber-'));
    onTestFinished(() => rmSync(folder, { recursive: true, force: true }));
    const args = ['--sse', '--state', join(folder, 'subscriber.json')];
    const subscriber = await createClient(app, { grants: ['client_credentials'] });
    const before = run(args, subscriber);
    await expect.poll(() => before.text, { timeout: 12_000 }).toContain('connected (server-sent events)');
    const first = await publish(app, publisher, subscriber.id);
    await expect.poll(() => before.text, { timeout: 5_000 }).toContain(first);
    // As a supervisor stops it: the example closes the stream and exits 0.
    before.child.kill('SIGTERM');
    expect(await before.exited).toBe(0);

    const after = run(args, subscriber);
    await expect.poll(() => after.text, { timeout: 12_000 }).toContain('connected (server-sent events)');
    const second = await publish(app, publisher, subscriber.id);
    await expect.poll(() => after.text, { timeout: 5_000 }).toContain(second);
    expect(after.text).not.toContain(first);
  }, 45_000);
});

describe('examples/notification-subscriber.ts at the command line', () => {
  it('explains itself with --help, without a service or a client, and exits 0', async () => {
    const { code, stdout, stderr } = await runToEnd(EXAMPLE, ['--help']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toMatch(/^Usage: npm run example:subscriber -- /);
    for (const option of ['--api', '--scope', '--protocol', '--sse', '--state', '--help']) expect(stdout).toContain(option);
    expect(stdout).toContain('CLIENT_ID');
  });

  it('refuses an unknown option in one line that points to --help, without a stack', async () => {
    const { code, stdout, stderr } = await runToEnd(EXAMPLE, ['--reconnect', '1'], { CLIENT_ID: 'x', CLIENT_SECRET: 'y' });
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe("Unknown option '--reconnect'. See: npm run example:subscriber -- --help\n");
  });
});
