import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import type { Browser } from 'playwright-core';
import QRCode from 'qrcode';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { DEVICE_GRANT, verifyDevice } from '../../factories/device-flow.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { type PortalUser, userId } from '../../factories/token-flow.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { launchChromium } from '../../setup/chromium.js';
import { query } from '../../setup/database.js';
import { freePort } from '../../setup/free-port.js';
import { runToEnd, spawnExample } from '../../setup/run-example.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const EXAMPLE = fileURLToPath(new URL('../../../examples/device-client.ts', import.meta.url));

/** Runs examples/device-client.ts until it has exchanged a code and refreshed once. */
function runExample(app: TestApp, client: { id: string; secret: string }, extraArgs: string[]) {
  const child = spawnExample(EXAMPLE, ['--api', app.baseUrl, '--refresh-margin', '3599', '--once', ...extraArgs], {
    env: { PATH: process.env.PATH, CLIENT_ID: client.id, CLIENT_SECRET: client.secret },
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
  const exited = once(child, 'exit').then(([code]) => code);
  return { authorizeUrl, exited, output: () => output };
}

/**
 * Runs examples/device-client.ts --device-flow: its stdout is for the person at the device, its
 * stderr has a `poll: <outcome>` line for each poll that brought no token.
 */
function runDeviceFlow(app: TestApp, client: TestClient, extraArgs: string[] = []) {
  const child = spawnExample(EXAMPLE, ['--api', app.baseUrl, '--device-flow', ...extraArgs], {
    env: { PATH: process.env.PATH, CLIENT_ID: client.id, CLIENT_SECRET: client.secret },
  });
  onTestFinished(() => {
    if (child.exitCode === null) child.kill();
  });
  let stdout = '';
  let stderr = '';
  /** Each poll's outcome and when its line arrived. */
  const polls: { outcome: string; at: number }[] = [];
  const checks = new Set<() => void>();
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
    for (const check of checks) check();
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
    // Whole lines only: a chunk may end inside one.
    const outcomes = [...stderr.matchAll(/^poll: ([^;\n]+).*\n/gm)].map((match) => match[1]);
    for (const outcome of outcomes.slice(polls.length)) polls.push({ outcome, at: Date.now() });
    for (const check of checks) check();
  });
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
  const pollCount = (count: number) => until(() => (polls.length >= count ? polls.length : undefined));
  return { userCode, exited, until, polls, pollCount, stdout: () => stdout, stderr: () => stderr };
}

describe('examples/device-client.ts', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('signs in by polling, exchanges the code and refreshes before expiry', async () => {
    const client = await createClient(app);
    const user = await createUser(app);
    const example = runExample(app, client, []);
    expect((await signIn(await example.authorizeUrl, user)).status).toBe(200);
    expect(await example.exited).toBe(0);
    expect(example.output()).toMatch(/Signed in: exchanging the code for tokens\.[\s\S]*Access token for [\s\S]*Refreshed\./);
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
    expect(example.output()).toContain('Refreshed.');
  });

  it('finds the service by PORT when no --api is given, as the service itself reads it', async () => {
    const client = await createClient(app);
    const child = spawnExample(EXAMPLE, [], { env: { PATH: process.env.PATH, CLIENT_ID: client.id, CLIENT_SECRET: client.secret, PORT: String(app.env.PORT) } });
    onTestFinished(() => void child.kill());
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    await expect.poll(() => output, { timeout: 10_000 }).toContain('/sso/authorize?');
  });

  it('names the address it cannot reach, instead of a bare "fetch failed"', async () => {
    const closedPort = await freePort();
    const child = spawnExample(EXAMPLE, ['--device-flow'], { env: { PATH: process.env.PATH, CLIENT_ID: 'x', CLIENT_SECRET: 'y', PORT: String(closedPort) } });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const [code] = await once(child, 'exit');
    expect(code).toBe(1);
    expect(stderr).toContain(`cannot reach http://localhost:${closedPort} (`);
  });
});

describe('examples/device-client.ts at the command line', () => {
  it('explains itself with --help, without a service or a client, and exits 0', async () => {
    const { code, stdout, stderr } = await runToEnd(EXAMPLE, ['--help']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toMatch(/^Usage: npm run example:device -- /);
    for (const option of ['--redirect', '--device-flow', '--scope', '--api', '--refresh-margin', '--once', '--help']) expect(stdout).toContain(option);
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

  it("shows a page in the service's look at its callback after sign-in, readable on a phone, and again on a refresh", async () => {
    const client = await createClient(app, { redirectPatterns: ['http://127.0.0.0/8:*/callback'] });
    const user = await createUser(app);
    // Without --once: the example keeps running (and its callback answering) until it is stopped.
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
    await expect.poll(() => output, { timeout: 10_000 }).toContain('Access token for');

    const again = await page.reload();
    expect(again!.status()).toBe(200);
    await looksLikeTheService();
    // The refresh brought the same code again: the example signed in once.
    expect(output.split('Signed in: exchanging the code for tokens.')).toHaveLength(2);
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
    expect(example.polls.slice(0, 2).map((poll) => poll.outcome)).toEqual(['authorization_pending', 'authorization_pending']);
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
    expect(stdout).toMatch(new RegExp(`Approved\\.\\nAccess token for ${await userId(app, user)} \\(scope voyages:read\\), expires in 3600 s: \\S{12}…\\n`));
    // Kept to the service's 1 s interval to the end: never too fast for it.
    expect(example.polls.map((poll) => poll.outcome)).toEqual(example.polls.map(() => 'authorization_pending'));
  }, 30_000);

  it('exits non-zero saying access was denied when the user denies', async () => {
    const example = runDeviceFlow(app, client);
    await verifyDevice(app, await example.userCode, user, 'deny');
    expect(await example.exited).toBe(1);
    expect(example.polls.at(-1)?.outcome).toBe('access_denied');
    expect(example.stderr()).toContain('Access was denied: the user declined on the verification page.');
    expect(example.stdout()).not.toContain('Access token');
  }, 30_000);

  it('polls at the service\'s interval, and after a slow_down at one 5 s longer for all later polls (RFC 8628 §3.5)', async () => {
    const example = runDeviceFlow(app, client);
    const userCode = await example.userCode;
    await example.pollCount(2);
    // The interval the service gave (1 s), not the 5 s default.
    expect(example.polls[1].at - example.polls[0].at).toBeLessThan(4_000);

    // As if the device had just polled through another instance: its next poll comes too early.
    await query(app.databaseUrl, `UPDATE device_codes SET last_polled_at = clock_timestamp() + interval '2 seconds' WHERE user_code = $1`, [userCode.replace('-', '')]);
    const slowDown = await example.until(() => {
      const index = example.polls.findIndex((poll) => poll.outcome === 'slow_down');
      return index === -1 ? undefined : index;
    });
    // The service now wants 6 s between polls: a device that kept 1 s, or went back to it after one longer wait, gets slow_down again.
    await example.pollCount(slowDown + 3);
    const outcomes = example.polls.map((poll) => poll.outcome);
    expect(outcomes.slice(0, slowDown)).toEqual(outcomes.slice(0, slowDown).map(() => 'authorization_pending'));
    expect(outcomes.slice(slowDown)).toEqual(['slow_down', 'authorization_pending', 'authorization_pending']);
    for (const index of [slowDown + 1, slowDown + 2]) {
      expect(example.polls[index].at - example.polls[index - 1].at).toBeGreaterThanOrEqual(5_500);
    }
    expect(example.stderr()).toContain('poll: slow_down; next in 6 s');

    await verifyDevice(app, userCode, user);
    expect(await example.exited).toBe(0);
    expect(example.polls.map((poll) => poll.outcome).filter((outcome) => outcome === 'slow_down')).toHaveLength(1);
    expect(example.stdout()).toContain('Access token for');
  }, 45_000);
});
