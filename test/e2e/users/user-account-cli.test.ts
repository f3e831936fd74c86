import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEVICE_GRANT, pollDeviceToken, startDeviceAuthorization, VerificationPage, verifyDevice } from '../../factories/device-flow.factory.js';
import { SUBSCRIBE_SCOPE } from '../../factories/notification.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { openStream, type Stream } from '../../factories/stream.factory.js';
import { issueTokens, LOOPBACK_PATTERN, LOOPBACK_REDIRECT, type PortalUser, refresh } from '../../factories/token-flow.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { expectFailure, parseSuccess, securityEvents } from '../../setup/cli-results.js';
import { query } from '../../setup/database.js';
import { CLI_TEST_TIMEOUT_MS, runCli as runBuiltCli } from '../../setup/processes.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { canPlayTerminal, runCliAtTerminal } from '../../setup/terminal.js';

vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

/** Resolves with the close code, or 'open' if the stream is still open after `ms`. */
const closedWithin = (stream: Stream, ms: number) =>
  Promise.race([stream.closed.then(({ code }) => code), new Promise<'open'>((resolve) => setTimeout(() => resolve('open'), ms))]);

type SignedOutUser = { id: string; username: string; enabled: boolean; created_at: string; revoked_grants: number };

/** The portal-user account commands and grants:revoke, run as operators run them, beside a running service. */
let app: TestApp;
let helperClient: TestClient;
let deviceClient: TestClient;
let cwd: string;
const runCli = (args: string[], stdin?: string) => runBuiltCli(args, { cwd, stdin, env: { DATABASE_URL: app.databaseUrl, LOG_LEVEL: 'warn' } });

/** What the login page answers a sign-in, as the user reads it. */
async function loginPage(user: PortalUser): Promise<string> {
  const response = await signIn((await issueState(app, helperClient.id)).authorize_url, user);
  const html = await response.text();
  if (response.status === 200 && html.includes('Return to your device')) return 'signed in';
  return /<p class="error" role="alert"[^>]*>([^<]*)<\/p>/.exec(html)?.[1] ?? `status ${response.status}`;
}

/** What the verification page (RFC 8628) answers a sign-in, as the user reads it. */
async function verificationPage(user: PortalUser): Promise<string> {
  const { user_code } = await startDeviceAuthorization(app, deviceClient);
  const page = await VerificationPage.open(app);
  await page.submit({ user_code });
  await page.submit({ username: user.username, password: user.password });
  return page.error ?? (page.html.includes('name="decision"') ? 'signed in' : `status ${page.status}`);
}

/** A device signed in through the device flow: its refresh token. */
async function deviceSignIn(user: PortalUser): Promise<string> {
  const { device_code, user_code } = await startDeviceAuthorization(app, deviceClient);
  await verifyDevice(app, user_code, user);
  const response = await pollDeviceToken(app, deviceClient, device_code);
  if (response.status !== 200) throw new Error(`device token answered ${response.status}: ${response.text}`);
  return response.body.refresh_token as string;
}

const helperRefreshStatus = async (refreshToken: string) => (await refresh(app, helperClient, refreshToken)).status;

beforeAll(async () => {
  app = await startTestApp();
  helperClient = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN], scopes: [SUBSCRIBE_SCOPE] });
  deviceClient = await createClient(app, { grants: [DEVICE_GRANT as never, 'refresh_token'] });
  cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-cli-'));
});
afterAll(async () => {
  await app?.close();
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

describe('user:set-password', () => {
  it("reads the new password from stdin, signs the user's devices out, and only the new password signs in", async () => {
    const user = await createUser(app);
    const tokens = await issueTokens(app, helperClient, user, { redirectUrl: LOOPBACK_REDIRECT });
    const newPassword = 'a brand new passphrase';

    const run = await runCli(['user:set-password', user.username.toUpperCase()], `${newPassword}\n`);
    expect(parseSuccess<SignedOutUser>(run)).toEqual({ id: expect.any(String), username: user.username, provider: null, enabled: true, created_at: expect.any(String), revoked_grants: 1 });
    expect(run.stdout + run.stderr).not.toContain(newPassword);

    expect(await refresh(app, helperClient, tokens.refresh_token)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await loginPage(user)).toBe('Wrong username or password.');
    expect(await loginPage({ ...user, password: newPassword })).toBe('signed in');
  });

  it('refuses a password the create rules refuse, or an unknown user, and changes nothing', async () => {
    const user = await createUser(app);
    const tokens = await issueTokens(app, helperClient, user, { redirectUrl: LOOPBACK_REDIRECT });
    const hashOf = async () => (await query<{ password_hash: string }>(app.databaseUrl, 'SELECT password_hash FROM portal_users WHERE username = $1', [user.username]))[0].password_hash;
    const before = await hashOf();
    expectFailure(await runCli(['user:set-password', user.username], ''), /password must be at least 8 characters long/);
    expectFailure(await runCli(['user:set-password', user.username], 'sevench\n'), /password must be at least 8 characters long/);
    expectFailure(await runCli(['user:set-password', user.username], `${'x'.repeat(1025)}\n`), /password must be at most 1024 characters long/);
    for (const username of ['nobody-here', 'bad\u0001name', 'x'.repeat(5_000)]) {
      expectFailure(await runCli(['user:set-password', username], 'a good long password\n'), /^error: no user named "/);
    }
    expectFailure(await runCli(['user:set-password'], 'a good long password\n'));
    expect(await hashOf()).toBe(before);
    expect(await helperRefreshStatus(tokens.refresh_token)).toBe(200);
  });
});

describe('user:disable and user:enable', () => {
  it('a disabled user is refused at both sign-in pages like a wrong password, and every device of theirs is signed out', async () => {
    const user = await createUser(app);
    const helperTokens = await issueTokens(app, helperClient, user, { redirectUrl: LOOPBACK_REDIRECT, scope: SUBSCRIBE_SCOPE });
    const deviceRefreshToken = await deviceSignIn(user);
    const stream = await openStream(app.baseUrl, helperTokens.access_token);
    // Approved on the verification page, not yet collected by its device.
    const waiting = await startDeviceAuthorization(app, deviceClient);
    await verifyDevice(app, waiting.user_code, user);

    const disabling = await runCli(['user:disable', user.username]);
    const disabled = parseSuccess<SignedOutUser>(disabling);
    expect(disabled).toMatchObject({ username: user.username, enabled: false, revoked_grants: 2 });
    expect(securityEvents(disabling)).toEqual([
      expect.objectContaining({ level: 'info', event: 'user.disabled', reason: 'cli', username: user.username, userId: disabled.id, revokedGrants: 2 }),
    ]);

    expect(await closedWithin(stream, 2_000)).toBe(1008);
    expect(await refresh(app, helperClient, helperTokens.refresh_token)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await refresh(app, deviceClient, deviceRefreshToken)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await pollDeviceToken(app, deviceClient, waiting.device_code)).toMatchObject({ status: 400, body: { error: 'expired_token' } });
    expect(await loginPage(user)).toBe('Wrong username or password.');
    expect(await verificationPage(user)).toBe('Wrong username or password.');

    const users = parseSuccess<{ username: string; enabled: boolean }[]>(await runCli(['user:list']));
    expect(users.find((listed) => listed.username === user.username)).toMatchObject({ enabled: false });
    // Disabling again changes nothing and revokes nothing more.
    expect(parseSuccess<SignedOutUser>(await runCli(['user:disable', user.username]))).toMatchObject({ enabled: false, revoked_grants: 0 });
  });

  it('user:enable lets the user sign in again; the grants revoked meanwhile stay revoked', async () => {
    const user = await createUser(app);
    const tokens = await issueTokens(app, helperClient, user, { redirectUrl: LOOPBACK_REDIRECT });
    parseSuccess(await runCli(['user:disable', user.username]));
    const enabled = parseSuccess(await runCli(['user:enable', user.username]));
    expect(enabled).toEqual({ id: expect.any(String), username: user.username, provider: null, enabled: true, created_at: expect.any(String) });
    expect(await loginPage(user)).toBe('signed in');
    expect(await verificationPage(user)).toBe('signed in');
    expect(await helperRefreshStatus(tokens.refresh_token)).toBe(400);
  });

  it('fails for an unknown user or without one', async () => {
    for (const command of ['user:disable', 'user:enable']) {
      expectFailure(await runCli([command, 'nobody-here']), /^error: no user named "nobody-here"/);
      expect(await runCli([command])).toMatchObject({ code: 1, stdout: '' });
    }
  });
});

describe('grants:revoke', () => {
  it("revokes the user's grants on one client with --client, or on every client, and says how many", async () => {
    const user = await createUser(app);
    const other = await createUser(app);
    const helper = [await issueTokens(app, helperClient, user, { redirectUrl: LOOPBACK_REDIRECT }), await issueTokens(app, helperClient, user, { redirectUrl: LOOPBACK_REDIRECT })];
    const device = await deviceSignIn(user);
    const othersTokens = await issueTokens(app, helperClient, other, { redirectUrl: LOOPBACK_REDIRECT });

    const run = await runCli(['grants:revoke', '--user', user.username, '--client', deviceClient.id]);
    const user_id = (await query<{ id: string }>(app.databaseUrl, 'SELECT id FROM portal_users WHERE username = $1', [user.username]))[0].id;
    expect(parseSuccess(run)).toEqual({ user_id, username: user.username, client_id: deviceClient.id, revoked_grants: 1 });
    expect((await refresh(app, deviceClient, device)).status).toBe(400);
    const renewed = await refresh(app, helperClient, helper[0].refresh_token);
    expect(renewed.status).toBe(200);

    expect(parseSuccess(await runCli(['grants:revoke', '--user', user.username]))).toMatchObject({ client_id: null, revoked_grants: 2 });
    expect(await helperRefreshStatus(renewed.body.refresh_token as string)).toBe(400);
    expect(await helperRefreshStatus(helper[1].refresh_token)).toBe(400);
    expect(await helperRefreshStatus(othersTokens.refresh_token)).toBe(200);
    expect(parseSuccess(await runCli(['grants:revoke', '--user', user.username]))).toMatchObject({ revoked_grants: 0 });
    // Signed out, not locked out.
    expect(await loginPage(user)).toBe('signed in');
  });

  it("closes the user's open streams at once", async () => {
    const user = await createUser(app);
    const tokens = await issueTokens(app, helperClient, user, { redirectUrl: LOOPBACK_REDIRECT, scope: SUBSCRIBE_SCOPE });
    const stream = await openStream(app.baseUrl, tokens.access_token);
    parseSuccess(await runCli(['grants:revoke', '--user', user.username]));
    expect(await closedWithin(stream, 2_000)).toBe(1008);
    await expect(openStream(app.baseUrl, tokens.access_token)).rejects.toThrow(/401/);
  });

  it('fails for an unknown user or client, or without --user, revoking nothing', async () => {
    const user = await createUser(app);
    const tokens = await issueTokens(app, helperClient, user, { redirectUrl: LOOPBACK_REDIRECT });
    expectFailure(await runCli(['grants:revoke', '--user', 'nobody-here']), /no user named "nobody-here"/);
    expectFailure(await runCli(['grants:revoke', '--user', user.username, '--client', 'no-such-client']), /no client with id "no-such-client"/);
    expectFailure(await runCli(['grants:revoke']), /--user/);
    expect(await helperRefreshStatus(tokens.refresh_token)).toBe(200);
  });
});

describe('grants:list', () => {
  type ListedGrant = {
    grant_id: string;
    client_id: string;
    client_name: string;
    scope: string | null;
    flow: string;
    created_at: string;
    created_address: string | null;
    last_refreshed_at: string | null;
    last_refreshed_address: string | null;
    expires_at: string | null;
  };

  it("lists the user's signed-in devices, oldest first, with client, scope, addresses, last refresh and expiry; revoked ones leave the list", async () => {
    const user = await createUser(app);
    const other = await createUser(app);
    const helper = await issueTokens(app, helperClient, user, { redirectUrl: LOOPBACK_REDIRECT, scope: SUBSCRIBE_SCOPE });
    await deviceSignIn(user);
    await issueTokens(app, helperClient, other, { redirectUrl: LOOPBACK_REDIRECT });
    expect((await refresh(app, helperClient, helper.refresh_token)).status).toBe(200);

    for (const form of [['--username', user.username], ['--user', user.username.toUpperCase()]]) {
      const grants = parseSuccess<ListedGrant[]>(await runCli(['grants:list', ...form]));
      expect(grants).toEqual([
        {
          grant_id: expect.any(String),
          client_id: helperClient.id,
          client_name: expect.stringMatching(/^client-/),
          scope: SUBSCRIBE_SCOPE,
          flow: 'helper',
          created_at: expect.any(String),
          created_address: '127.0.0.1',
          last_refreshed_at: expect.any(String),
          last_refreshed_address: '127.0.0.1',
          expires_at: expect.any(String),
        },
        expect.objectContaining({ client_id: deviceClient.id, flow: 'device', created_address: '127.0.0.1', last_refreshed_at: null, last_refreshed_address: null, expires_at: expect.any(String) }),
      ]);
      expect(Date.parse(grants[0].expires_at!)).toBeGreaterThan(Date.now() + 13 * 86_400_000);
    }

    parseSuccess(await runCli(['grants:revoke', '--username', user.username, '--client', deviceClient.id]));
    expect(parseSuccess<ListedGrant[]>(await runCli(['grants:list', '--username', user.username])).map((grant) => grant.client_id)).toEqual([helperClient.id]);
    expect(await runCli(['grants:list', '--username', other.username]).then((run) => parseSuccess<ListedGrant[]>(run).length)).toBe(1);
  }, 120_000);

  it('prints a table within 100 columns, and [] or (none) for a user without devices', async () => {
    const user = await createUser(app);
    await issueTokens(app, helperClient, user, { redirectUrl: LOOPBACK_REDIRECT });
    const table = await runCli(['grants:list', '--username', user.username, '--format', 'table']);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0].split(/\s{2,}/)).toEqual(['grant_id', 'client_id', 'created_at', 'created_address']);
    expect(lines[2]).toContain(helperClient.id);
    expect(lines.slice(3).join(' ')).toMatch(/^\(5 more columns: last_refreshed_at, .*; --format json shows everything\)$/);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(100);

    const nobody = await createUser(app);
    expect(parseSuccess(await runCli(['grants:list', '--username', nobody.username]))).toEqual([]);
    expect((await runCli(['grants:list', '--username', nobody.username, '--format', 'table'])).stdout).toBe('(none)\n');
  }, 120_000);

  it('fails with exit 1 for an unknown user, or without one', async () => {
    expectFailure(await runCli(['grants:list', '--username', 'nobody-here']), /^error: no user named "nobody-here"/);
    expectFailure(await runCli(['grants:list']), /--username/);
  }, 120_000);
});

describe.runIf(canPlayTerminal)('new passwords typed at a terminal', () => {
  const atTerminal = (args: string[], answers: string[]) => runCliAtTerminal(args, answers, { DATABASE_URL: app.databaseUrl, LOG_LEVEL: 'warn' });

  it('user:set-password asks twice without echo, and takes the password when both entries match', async () => {
    const user = await createUser(app);
    const run = await atTerminal(['user:set-password', user.username], ['typed at a terminal', 'typed at a terminal']);
    expect(run.code, run.output).toBe(0);
    expect(run.output).toMatch(/New password: \r?\nNew password again: \r?\n/);
    expect(run.output).not.toContain('typed at a terminal');
    expect(await loginPage({ ...user, password: 'typed at a terminal' })).toBe('signed in');
  });

  it('user:set-password refuses two entries that differ, changing nothing', async () => {
    const user = await createUser(app);
    const run = await atTerminal(['user:set-password', user.username], ['first of two entries', 'second of two entries']);
    expect(run.code, run.output).toBe(1);
    expect(run.output).toContain('error: the two entries do not match; nothing was changed');
    expect(await loginPage(user)).toBe('signed in');
  });

  it('user:create asks twice too', async () => {
    const username = `typist-${Date.now()}`;
    const run = await atTerminal(['user:create', '--username', username], ['typed twice at create', 'typed twice at create']);
    expect(run.code, run.output).toBe(0);
    expect(run.output).toMatch(/Password: \r?\nPassword again: \r?\n/);
    expect(await loginPage({ username, password: 'typed twice at create' })).toBe('signed in');
  });
});
