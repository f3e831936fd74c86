import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { clientToken, PUBLISH_SCOPE, type PublishBody, publish, validNotification } from '../../factories/notification.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { freePort } from '../../setup/free-port.js';
import { DEVICE_LANGUAGES, type DeviceCommand, type DeviceLanguage, startDeviceCommand } from '../../setup/device-commands.js';
import { openSatelliteLink } from '../../../bench/lib/satellite-link.js';
import { startSecondInstance } from '../../setup/instances.js';
import { type Nginx, startNginx } from '../../setup/nginx.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/**
 * One list of scenarios for both device SDKs, each run through the command its package installs
 * (`voyage-connect-device`, `python -m voyage_connect`) against the real service, nginx and
 * Chromium: what a device maker's program does, seen from outside.
 */

const QUIET_MS = 700;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(DEVICE_LANGUAGES)('the $name device SDK', (language: DeviceLanguage) => {
  let app: TestApp;
  let publisherToken: string;
  let folder: string;
  const running: DeviceCommand[] = [];

  beforeAll(async () => {
    await language.argv(); // the Python SDK's environment is made (or found) once, before the clocks start
    app = await startTestApp();
    publisherToken = await clientToken(app, await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] }), PUBLISH_SCOPE);
    folder = await mkdtemp(join(tmpdir(), 'voyage-connect-sdk-'));
  }, 600_000);
  afterAll(async () => {
    for (const command of running) if (command.child.exitCode === null) command.child.kill('SIGKILL');
    await app?.close();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  const device = async (args: string[], secret?: string) => {
    const command = await startDeviceCommand(language, args, secret === undefined ? {} : { VOYAGE_CLIENT_SECRET: secret });
    running.push(command);
    return command;
  };
  const subscribe = (on: { baseUrl: string }, client: TestClient, extra: string[] = []) => device(['subscribe', '--api', on.baseUrl, '--client-id', client.id, ...extra], client.secret);
  const subscriberClient = () => createClient(app, { grants: ['client_credentials'] });
  const published = async (recipient: string, count: number, through: TestApp = app, token = publisherToken): Promise<PublishBody[]> => {
    const bodies: PublishBody[] = [];
    for (let i = 0; i < count; i++) {
      const body = validNotification(recipient);
      expect((await publish(through, token, body)).status).toBe(202);
      bodies.push(body);
    }
    return bodies;
  };
  const notifications = (command: DeviceCommand) => command.lines().filter((line) => 'notification' in line);
  const ids = (command: DeviceCommand) => notifications(command).map((line) => (line.notification as { correlationId: string }).correlationId);
  const received = (command: DeviceCommand, count: number, timeoutMs?: number) => command.until(() => notifications(command).length >= count, `${count} notifications`, timeoutMs);
  const connected = (command: DeviceCommand, times = 1) => command.until(() => (command.stderr().match(/^connected/gm) ?? []).length >= times, 'connection');
  const savedSeq = async (state: string) => ((JSON.parse(await readFile(state, 'utf8').catch(() => '{}')) as { position?: { seq: number } }).position?.seq ?? 0);

  for (const transport of ['v2', 'sse'] as const) {
    it(`subscribes (${transport}), and resumes after a SIGKILL with --state: nothing lost, nothing repeated`, async () => {
      const client = await subscriberClient();
      const state = join(folder, `${language.name}-${transport}.json`);
      const first = await subscribe(app, client, ['--transport', transport, '--state', state]);
      await connected(first);
      const before = await published(client.id, 3);
      await received(first, 3);
      expect(ids(first)).toEqual(before.map((body) => body.correlationId));
      const seqs = notifications(first).map((line) => line.seq as number);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      // Handled and saved: the position the restart resumes from.
      await expect.poll(() => savedSeq(state), { timeout: 5_000 }).toBe(seqs[2]);
      first.child.kill('SIGKILL');
      await first.exited;

      const missed = await published(client.id, 2);
      const second = await subscribe(app, client, ['--transport', transport, '--state', state]);
      await received(second, 2);
      await sleep(QUIET_MS);
      expect(ids(second)).toEqual(missed.map((body) => body.correlationId));
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    });
  }

  it('subscribes to the original stream (v1) on request: the seed fields, no seq', async () => {
    const client = await subscriberClient();
    const command = await subscribe(app, client, ['--transport', 'v1']);
    await connected(command);
    const [body] = await published(client.id, 1);
    await received(command, 1);
    expect(command.lines()[0]).toEqual({ notification: expect.objectContaining({ correlationId: body.correlationId, productName: body.productName }) });
    expect(command.lines()[0]).not.toHaveProperty('seq');
    command.child.kill('SIGTERM');
    expect(await command.exited).toBe(0);
  });

  it('replaces an expiring token in band on protocol v2 (never closed with 4003), and reconnects with a new one after 4003 on v1', async () => {
    const shortLived = await startTestApp({ CLIENT_TOKEN_TTL: '5' });
    onTestFinished(() => shortLived.close());
    const publisher = await createClient(shortLived, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    const v2Client = await createClient(shortLived, { grants: ['client_credentials'] });
    const v1Client = await createClient(shortLived, { grants: ['client_credentials'] });
    const v2 = await subscribe(shortLived, v2Client, ['--transport', 'v2']);
    const v1 = await subscribe(shortLived, v1Client, ['--transport', 'v1']);
    await connected(v2);
    await connected(v1);
    // Two of the tokens' lives.
    await sleep(11_000);
    const token = await clientToken(shortLived, publisher, PUBLISH_SCOPE);
    const [forV2] = await published(v2Client.id, 1, shortLived, token);
    const [forV1] = await published(v1Client.id, 1, shortLived, token);
    await received(v2, 1);
    await received(v1, 1);
    expect(ids(v2)).toEqual([forV2.correlationId]);
    expect(ids(v1)).toEqual([forV1.correlationId]);
    expect(v2.stderr()).not.toMatch(/token expired|reconnecting/);
    expect(v2.stderr().match(/^connected/gm)).toHaveLength(1);
    expect(v1.stderr()).toMatch(/token expired: a new one, then 1 s/);
    expect(v1.stderr().match(/^connected/gm)!.length).toBeGreaterThanOrEqual(2);
  });

  it('falls back to server-sent events behind a proxy that refuses WebSocket, and loses nothing', async () => {
    const proxy = await startNginx({ upstreamPort: app.env.PORT });
    onTestFinished(() => proxy.stop());
    const client = await subscriberClient();
    const waiting = await published(client.id, 2);
    const command = await subscribe(proxy, client);
    await connected(command);
    expect(command.stderr()).toContain('connected (server-sent events)');
    const live = await published(client.id, 2);
    await received(command, 4);
    await sleep(QUIET_MS);
    expect(ids(command)).toEqual([...waiting, ...live].map((body) => body.correlationId));
  });

  it('says reset: retention when what it missed expired, then goes on', async () => {
    const short = await startTestApp({ NOTIFICATION_RETENTION: '2', HOUSEKEEPING_INTERVAL: '1' });
    onTestFinished(() => short.close());
    const token = await clientToken(short, await createClient(short, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] }), PUBLISH_SCOPE);
    const client = await createClient(short, { grants: ['client_credentials'] });
    const state = join(folder, `${language.name}-reset.json`);
    const first = await subscribe(short, client, ['--state', state]);
    await connected(first);
    await published(client.id, 1, short, token);
    await received(first, 1);
    await expect.poll(() => savedSeq(state), { timeout: 5_000 }).toBeGreaterThan(0);
    first.child.kill('SIGKILL');
    await first.exited;
    // Away longer than the retention: the next one expires unseen.
    await published(client.id, 1, short, token);
    await sleep(3_500);
    const [kept] = await published(client.id, 1, short, token);
    const second = await subscribe(short, client, ['--state', state]);
    await second.until(() => second.lines().length >= 2, 'the reset and what remains');
    expect(second.lines()[0]).toEqual({ reset: 'retention' });
    expect(ids(second)).toEqual([kept.correlationId]);
  });

  it('reconnects at once to the other instance when its instance stops (1001), and loses nothing', async () => {
    const first = await startTestApp();
    const second = await startSecondInstance(first);
    let proxy: Nginx | undefined;
    onTestFinished(async () => {
      await proxy?.stop();
      await second.close();
      await first.close();
    });
    proxy = await startNginx({ upstreamPort: first.env.PORT, backupPort: second.env.PORT, websocket: true });
    const token = await clientToken(first, await createClient(first, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] }), PUBLISH_SCOPE);
    const client = await createClient(first, { grants: ['client_credentials'] });
    const command = await subscribe(proxy, client);
    await connected(command);
    const before = await published(client.id, 2, first, token);
    await received(command, 2);
    await first.close();
    const meanwhile = await published(client.id, 2, second, token);
    await connected(command, 2);
    await received(command, 4);
    await sleep(QUIET_MS);
    expect(command.stderr()).toMatch(/instance is stopping/);
    expect(ids(command)).toEqual([...before, ...meanwhile].map((body) => body.correlationId));
  });

  it('delivers everything across a satellite link (600 ms each way, 1 % loss) that is cut, reconnecting a bounded number of times', async () => {
    const link = await openSatelliteLink({ upstreamPort: app.env.PORT });
    onTestFinished(() => link.close());
    // Pinged every 5 s: a connection the cut left dead is noticed after three missed pings.
    const client = await createClient(app, { grants: ['client_credentials'], heartbeatInterval: 5 });
    const args = ['subscribe', '--api', `http://${link.host}:${link.port}`, '--client-id', client.id];
    const command = await startDeviceCommand(language, args, { VOYAGE_CLIENT_SECRET: client.secret }, (file, rest, options) => link.exec(file, rest, options));
    running.push(command);
    await command.until(() => /^connected/m.test(command.stderr()), 'connection', 60_000);
    const before = await published(client.id, 2);
    await received(command, 2, 30_000);
    // Long enough for the service to learn its beat first.
    await sleep(12_000);
    const cut = link.cut(5_000);
    const during = await published(client.id, 2);
    await cut;
    const after = await published(client.id, 1);
    await received(command, 5, 90_000);
    await sleep(QUIET_MS);
    expect(ids(command)).toEqual([...before, ...during, ...after].map((body) => body.correlationId));
    expect(command.stderr().match(/^connected/gm)!.length).toBeLessThanOrEqual(3);
  }, 240_000);

  it('says at once, and at every try, that the service cannot be reached', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const command = await device(['sign-in', '--api', closed, '--client-id', 'x'], 'y');
    // The service may be restarting: it keeps trying for a while, saying so each time.
    await command.until(() => /cannot reach http:\/\/127\.0\.0\.1:\d+ \(.*\); trying again in \d+\.\d s/.test(command.stderr()), 'a line naming the address', 10_000);
    command.child.kill('SIGTERM');
  });

  it('names a wrong client secret before it shows anyone where to sign in', async () => {
    const client = await createClient(app);
    const command = await device(['sign-in', '--api', app.baseUrl, '--client-id', client.id], 'not-the-secret');
    expect(await command.exited).toBe(1);
    expect(command.stderr()).toContain('VOYAGE_CLIENT_SECRET');
    expect(command.stderr()).not.toContain('/sso/authorize');
    expect(command.lines()).toEqual([]);
  });

  describe('signing a user in through Chromium', () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchChromium();
    });
    afterAll(() => browser?.close());

    const signInAt = async (command: DeviceCommand, user: { username: string; password: string }, expectUrl?: string) => {
      await command.until(() => /https?:\/\/\S+\/sso\/authorize\?\S+/.test(command.stderr()), 'sign-in address');
      const address = /https?:\/\/\S+\/sso\/authorize\?\S+/.exec(command.stderr())![0];
      const context = await browser.newContext({ javaScriptEnabled: false });
      onTestFinished(() => context.close());
      const page = await context.newPage();
      await page.goto(address);
      await page.getByLabel('Username').fill(user.username);
      await page.getByLabel('Password').fill(user.password);
      await Promise.all([expectUrl ? page.waitForURL(expectUrl) : page.waitForLoadState(), page.getByRole('button', { name: 'Sign in' }).click()]);
      return page;
    };
    /** The command printed the tokens, and they are the user's, live. */
    const expectTokens = async (command: DeviceCommand, client: TestClient) => {
      expect(await command.exited).toBe(0);
      const [tokens] = command.lines();
      expect(Object.keys(tokens).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope']);
      expect(tokens.expires_in).toBe(3600);
      const introspected = await fetch(`${app.baseUrl}/sso/introspect`, {
        method: 'POST',
        body: new URLSearchParams({ token: tokens.refresh_token as string, client_id: client.id, client_secret: client.secret }),
      });
      expect(await introspected.json()).toMatchObject({ active: true, client_id: client.id });
    };

    it('by polling: prints the address (warning that it names this machine only), then the tokens', async () => {
      const client = await createClient(app);
      const user = await createUser(app);
      const command = await device(['sign-in', '--api', app.baseUrl, '--client-id', client.id], client.secret);
      await signInAt(command, user);
      await expectTokens(command, client);
      expect(command.stderr()).toMatch(/this machine only/);
    });

    it('by redirect to its own callback: the browser is shown that the device is signed in', async () => {
      const client = await createClient(app, { redirectPatterns: ['http://127.0.0.0/8:*/callback'] });
      const user = await createUser(app);
      const command = await device(['sign-in', '--api', app.baseUrl, '--client-id', client.id, '--redirect-port', '0'], client.secret);
      const page = await signInAt(command, user, 'http://127.0.0.1:*/callback?**');
      expect(await page.getByRole('heading').textContent()).toBe('Your device is signed in');
      await expectTokens(command, client);
    });
  });
});
