import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import type { Browser } from 'playwright-core';
import QRCode from 'qrcode';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { DEVICE_GRANT, verifyDevice } from '../../factories/device-flow.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import type { PortalUser } from '../../factories/token-flow.factory.js';
import { ALICE, confirmSignIn, createSignInClient, newKek, registerProvider } from '../../factories/upstream.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { launchChromium } from '../../setup/chromium.js';
import { query } from '../../setup/database.js';
import { freePort } from '../../setup/free-port.js';
import { runToEnd, spawnExample } from '../../setup/run-example.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

const EXAMPLE = fileURLToPath(new URL('../../../examples/device-client.ts', import.meta.url));

/** What the example prints once signed in: the token's first 12 characters, never the token, never decoded (it is opaque). */
const SIGNED_IN = /Signed in: access token \S{12}… \(expires in \d+ s, scope [^)]+\)\n/;
const REFRESHED = /Refreshed: access token \S{12}…\n/;

/** Runs examples/device-client.ts until it has signed in and refreshed once (--once). */
function runExample(app: TestApp, client: { id: string; secret: string }, extraArgs: string[]) {
  const child = spawnExample(EXAMPLE, ['--api', app.baseUrl, '--once', ...extraArgs], {
    env: { PATH: process.env.PATH, CLIENT_ID: client.id, CLIENT_SECRET: client.secret },
  });
  onTestFinished(() => {
    if (child.exitCode === null) child.kill();
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const authorizeUrl = new Promise<string>((resolve) => {
    child.stdout.on('data', () => {
      const match = /(http:\/\/\S+\/sso\/authorize\?\S+)/.exec(output);
      if (match) resolve(match[1]);
    });
  });
  // 'close', not 'exit': the last output may still be on its way at exit.
  const exited = once(child, 'close').then(([code]) => code);
  return { authorizeUrl, exited, output: () => output };
}

/**
 * Runs examples/device-client.ts --device-flow: its stdout is for the person at the device. Its
 * polls are the SDK's and print nothing: `polls` are the ones the service logged (POST
 * /sso/token) since the example started, when each was answered.
 */
function runDeviceFlow(app: TestApp, client: TestClient, extraArgs: string[] = []) {
  const since = Date.now();
  const child = spawnExample(EXAMPLE, ['--api', app.baseUrl, '--device-flow', ...extraArgs], {
    env: { PATH: process.env.PATH, CLIENT_ID: client.id, CLIENT_SECRET: client.secret },
  });
  onTestFinished(() => {
    if (child.exitCode === null) child.kill();
  });
  let stdout = '';
  let stderr = '';
  const checks = new Set<() => void>();
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
    for (const check of checks) check();
  });
  child.stderr.on('data', (chunk) => (stderr += chunk));
  // 'close', not 'exit': the last output may still be on its way at exit.
  const exited = once(child, 'close').then(([code]) => code as number | null);
  /** What `find` finds in the output, as soon as it finds it; rejects if the example exits first. */
  const until = <T>(find: () => T | undefined) =>
    new Promise<T>((resolve, reject) => {
      const check = () => {
        const found = find();
        if (found === undefined) return;
        checks.delete(check);
        resolve(found);
      };
      checks.add(check);
      check();
      void exited.then(() => checks.has(check) && reject(new Error(`the example exited first:\n${stdout}${stderr}`)));
    });
  const userCode = until(() => /enter the code:\s+([A-Z]{4}-[A-Z]{4})\n/.exec(stdout)?.[1]);
  const polls = () =>
    app.logs
      .filter((line) => (line.req as { method?: string; path?: string } | undefined)?.path === '/sso/token' && Date.parse(line.time as string) >= since)
      .map((line) => Date.parse(line.time as string));
  const pollCount = (count: number) => expect.poll(() => polls().length, { timeout: 20_000, interval: 100 }).toBeGreaterThanOrEqual(count);
  return { userCode, exited, polls, pollCount, stdout: () => stdout, stderr: () => stderr };
}

/** How many slow_down answers the device code got: each added 5 s to its interval (RFC 8628 §3.5), from the service's 1 s. */
async function slowDowns(app: TestApp, userCode: string): Promise<number> {
  const [row] = await query<{ interval_seconds: number }>(app.databaseUrl, 'SELECT interval_seconds FROM device_codes WHERE user_code = $1', [userCode.replace('-', '')]);
  return (row.interval_seconds - 1) / 5;
}

describe('examples/device-client.ts', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('signs in by polling, shows the token it got, and refreshes it', async () => {
    const client = await createClient(app);
    const user = await createUser(app);
    const example = runExample(app, client, []);
    expect((await signIn(await example.authorizeUrl, user)).status).toBe(200);
    expect(await example.exited).toBe(0);
    expect(example.output()).toMatch(new RegExp(`${SIGNED_IN.source}${REFRESHED.source}`));
    expect(example.output()).toMatch(/\(expires in 3600 s, scope none\)/);
  }, 30_000);

  it('names a wrong client secret before it shows anyone where to sign in', async () => {
    const client = await createClient(app);
    const example = runExample(app, { id: client.id, secret: `${client.secret}-wrong` }, []);
    expect(await example.exited).toBe(1);
    expect(example.output()).toContain("the service refused the client's credentials");
    expect(example.output()).not.toContain('/sso/authorize');
  });

  it('keeps polling through a restart of the service, and signs in after it', async () => {
    const port = await freePort();
    let service = await startTestApp({ PORT: String(port) });
    onTestFinished(() => service.close().catch(() => {}));
    const client = await createClient(service);
    const user = await createUser(service);
    const example = runExample(service, client, []);
    const authorizeUrl = await example.authorizeUrl;
    await service.close();
    // The example polls every 5 s: at least one poll finds nothing listening.
    await sleep(6_000);
    service = await startTestApp({ PORT: String(port) }, service.databaseUrl);
    expect((await signIn(authorizeUrl, user)).status).toBe(200);
    expect(await example.exited).toBe(0);
    expect(example.output()).toMatch(SIGNED_IN);
  }, 45_000);

  it('with --state, signs in once: a restart uses the tokens it kept', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'example-device-'));
    onTestFinished(() => rmSync(folder, { recursive: true, force: true }));
    const state = join(folder, 'device.json');
    const client = await createClient(app);
    const user = await createUser(app);
    const first = runExample(app, client, ['--state', state]);
    expect((await signIn(await first.authorizeUrl, user)).status).toBe(200);
    expect(await first.exited).toBe(0);

    const second = runExample(app, client, ['--state', state]);
    expect(await second.exited).toBe(0);
    expect(second.output().split('\n')[0]).toBe(`Signed in already (the tokens in ${state}).`);
    expect(second.output()).toMatch(REFRESHED);
    expect(second.output()).not.toContain('/sso/authorize');
  }, 30_000);

  it('signs in through its own loopback callback', async () => {
    const client = await createClient(app, { redirectPatterns: ['http://127.0.0.0/8:*/callback'] });
    const user = await createUser(app);
    const example = runExample(app, client, ['--redirect']);
    const login = await signIn(await example.authorizeUrl, user);
    expect(login.status).toBe(302);
    // What the browser does next: follow the redirect to the device.
    expect((await fetch(login.headers.get('location')!)).status).toBe(200);
    expect(await example.exited).toBe(0);
    expect(example.output()).toMatch(new RegExp(`${SIGNED_IN.source}${REFRESHED.source}`));
  });

  it('finds the service by PORT when no --api is given, as the service itself reads it', async () => {
    const client = await createClient(app);
    const child = spawnExample(EXAMPLE, [], { env: { PATH: process.env.PATH, CLIENT_ID: client.id, CLIENT_SECRET: client.secret, PORT: String(app.env.PORT) } });
    onTestFinished(() => void child.kill());
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    await expect.poll(() => output, { timeout: 10_000 }).toContain('/sso/authorize?');
  });

  // The SDK waits out a restart of the service: it says so only once it gave up, about 30 s on.
  it('names the address it cannot reach at once, instead of a bare "fetch failed" or silence', async () => {
    const closedPort = await freePort();
    const child = spawnExample(EXAMPLE, ['--device-flow'], { env: { PATH: process.env.PATH, CLIENT_ID: 'x', CLIENT_SECRET: 'y', PORT: String(closedPort) } });
    onTestFinished(() => void child.kill());
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    // It keeps trying for a minute (the service may be restarting), saying so at every try.
    await expect.poll(() => stderr, { timeout: 10_000 }).toMatch(new RegExp(`cannot reach http://localhost:${closedPort} \\(.*\\); trying again in 1\\.0 s`));
  });
});

describe('examples/device-client.ts at the command line', () => {
  it('explains itself with --help, without a service or a client, and exits 0', async () => {
    const { code, stdout, stderr } = await runToEnd(EXAMPLE, ['--help']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toMatch(/^Usage: npm run example:device -- /);
    for (const option of ['--redirect', '--device-flow', '--scope', '--api', '--state', '--once', '--help']) expect(stdout).toContain(option);
    expect(stdout).toContain('CLIENT_ID');
  });

  it('refuses an unknown option in one line that points to --help, without a stack', async () => {
    const { code, stdout, stderr } = await runToEnd(EXAMPLE, ['--scopes', 'x'], { CLIENT_ID: 'x', CLIENT_SECRET: 'y' });
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe("Unknown option '--scopes'. See: npm run example:device -- --help\n");
  });
});

describe('examples/device-client.ts --redirect in a real browser', () => {
  let app: TestApp;
  let browser: Browser;
  beforeAll(async () => {
    app = await startTestApp();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it("shows a page in the service's look at its callback after sign-in, readable on a phone", async () => {
    const client = await createClient(app, { redirectPatterns: ['http://127.0.0.0/8:*/callback'] });
    const user = await createUser(app);
    // Without --once: the example keeps running (keeping its token fresh) until it is stopped.
    const child = spawnExample(EXAMPLE, ['--api', app.baseUrl, '--redirect'], { env: { PATH: process.env.PATH, CLIENT_ID: client.id, CLIENT_SECRET: client.secret } });
    onTestFinished(() => void child.kill());
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    await expect.poll(() => /http:\/\/\S+\/sso\/authorize\?\S+/.exec(output)?.[0], { timeout: 10_000 }).toBeDefined();
    const authorizeUrl = /http:\/\/\S+\/sso\/authorize\?\S+/.exec(output)![0];

    const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 390, height: 844 } });
    onTestFinished(() => context.close());
    const page = await context.newPage();
    await page.goto(authorizeUrl);
    await page.getByLabel('Username').fill(user.username);
    await page.getByLabel('Password').fill(user.password);
    await Promise.all([page.waitForURL('http://127.0.0.1:*/callback?**'), page.getByRole('button', { name: 'Sign in' }).click()]);

    const looksLikeTheService = async () => {
      expect(await page.getByRole('heading').textContent()).toBe('Your device is signed in');
      expect(await page.locator('main p').first().textContent()).toBe('You can close this window: the device carries on by itself.');
      expect(await page.locator('meta[name="viewport"]').getAttribute('content')).toBe('width=device-width, initial-scale=1');
      // The service's pages' type and column, not the browser's default serif across the whole width.
      expect(await page.evaluate<string>('getComputedStyle(document.body).fontFamily')).toContain('system-ui');
      expect((await page.locator('main').boundingBox())!.width).toBeLessThanOrEqual(384);
    };
    await looksLikeTheService();
    await page.screenshot({ path: 'test-results/example-callback-390.png' });
    await expect.poll(() => output, { timeout: 10_000 }).toMatch(SIGNED_IN);
    expect(output.split('Signed in:')).toHaveLength(2);
    // The page is asserted once: the SDK's listener closes as soon as the code arrived (a reload
    // now finds nothing listening), so the page a reload got from the old example is gone.
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.screenshot({ path: 'test-results/example-callback-1280.png' });
  }, 30_000);
});

describe('examples/device-client.ts --device-flow', () => {
  let app: TestApp;
  let client: TestClient;
  let user: PortalUser;
  beforeAll(async () => {
    // A 1 s interval keeps the runs short, and makes any poll faster than it visible as slow_down.
    app = await startTestApp({ DEVICE_POLL_INTERVAL: '1' });
    client = await createClient(app, { grants: [DEVICE_GRANT, 'refresh_token'], scopes: ['voyages:read'] });
    user = await createUser(app);
  });
  afterAll(() => app?.close());

  it('shows the address, the code and a QR code of the complete address, polls at the interval, and prints the tokens once approved', async () => {
    const example = runDeviceFlow(app, client, ['--scope', 'voyages:read']);
    const userCode = await example.userCode;
    await example.pollCount(2);
    expect((await verifyDevice(app, userCode, user)).status).toBe(200);
    expect(await example.exited).toBe(0);

    const stdout = example.stdout();
    expect(stdout).toContain(`open this address:\n\n  ${app.baseUrl}/sso/device\n`);
    // The QR code is the terminal block drawing of verification_uri_complete, code included.
    const qr = await QRCode.toString(`${app.baseUrl}/sso/device?user_code=${userCode}`, { type: 'terminal', small: true });
    expect(qr).toMatch(/[▀▄█]/);
    // Piped, not a terminal: the drawing without the terminal's colour escapes.
    expect(stdout).toContain(stripVTControlCharacters(qr));
    expect(stdout).not.toContain('\x1b');
    // The test app's FRONTEND_URL is 127.0.0.1: a phone could not open the address or the QR code.
    expect(stdout).toContain(`note: ${new URL(app.baseUrl).host} is this machine only: set the service's FRONTEND_URL to an address a phone can reach.\n`);
    expect(stdout).toMatch(/Signed in: access token \S{12}… \(expires in 3600 s, scope voyages:read\)\n$/);
    // Kept to the service's 1 s interval to the end: never too fast for it.
    expect(await slowDowns(app, userCode)).toBe(0);
    const polls = example.polls();
    for (let index = 1; index < polls.length; index++) expect(polls[index] - polls[index - 1]).toBeGreaterThanOrEqual(950);
  }, 30_000);

  it('exits non-zero saying access was denied when the user denies', async () => {
    const example = runDeviceFlow(app, client);
    await verifyDevice(app, await example.userCode, user, 'deny');
    expect(await example.exited).toBe(1);
    expect(example.stderr()).toBe('the user denied the device: ask the user to approve it, or do without\n');
    expect(example.stdout()).not.toContain('access token');
  }, 30_000);

  it('polls at the service\'s interval, and after a slow_down at one 5 s longer for all later polls (RFC 8628 §3.5)', async () => {
    const example = runDeviceFlow(app, client);
    const userCode = await example.userCode;
    await example.pollCount(2);
    // The interval the service gave (1 s), not the 5 s default.
    expect(example.polls()[1] - example.polls()[0]).toBeLessThan(4_000);
    expect(await slowDowns(app, userCode)).toBe(0);

    // As if the device had just polled through another instance: its next poll comes too early.
    await query(app.databaseUrl, `UPDATE device_codes SET last_polled_at = clock_timestamp() + interval '2 seconds' WHERE user_code = $1`, [userCode.replace('-', '')]);
    await expect.poll(() => slowDowns(app, userCode), { timeout: 10_000, interval: 100 }).toBe(1);
    // The poll that got slow_down is the latest: the next one is 6 s away.
    const slowDown = example.polls().length - 1;
    // The service now wants 6 s between polls: a device that kept 1 s, or went back to it after one longer wait, gets slow_down again.
    await example.pollCount(slowDown + 3);
    const polls = example.polls();
    for (const index of [slowDown + 1, slowDown + 2]) expect(polls[index] - polls[index - 1]).toBeGreaterThanOrEqual(5_500);
    expect(await slowDowns(app, userCode)).toBe(1);

    await verifyDevice(app, userCode, user);
    expect(await example.exited).toBe(0);
    expect(await slowDowns(app, userCode)).toBe(1);
    expect(example.stdout()).toMatch(SIGNED_IN);
  }, 45_000);
});

describe('examples/device-client.ts through an identity provider in relay mode', () => {
  let app: TestApp;
  let upstream: UpstreamProvider;
  let browser: Browser;
  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek() });
    [upstream, browser] = await Promise.all([startUpstreamProvider({ accounts: [ALICE] }), launchChromium()]);
    await registerProvider(app, upstream, 'corp', 'Corp account', 'relay');
  });
  afterAll(async () => {
    await browser?.close();
    await upstream?.stop();
    await app?.close();
  });

  // The old example decoded the access token as a JWT to name its user, and crashed on the provider's opaque one.
  it("shows the provider's own (opaque) token without decoding it, and refreshes it", async () => {
    const client = await createSignInClient(app, ['corp']);
    const example = runExample(app, client, []);
    const context = await browser.newContext();
    onTestFinished(() => context.close());
    const page = await context.newPage();
    await page.goto(await example.authorizeUrl);
    await signInAtUpstream(page, { username: ALICE.preferred_username!, password: ALICE.password });
    await confirmSignIn(page);
    expect(await example.exited).toBe(0);
    expect(example.output()).toMatch(new RegExp(`${SIGNED_IN.source}${REFRESHED.source}`));
  }, 45_000);
});
