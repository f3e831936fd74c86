import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, query } from '../../setup/database.js';
import { CLI_TEST_TIMEOUT_MS, type CliResult, runCli as runBuiltCli, runCliProcess } from '../../setup/processes.js';
import { securityEvents } from '../../setup/cli-results.js';
import { startTestApp } from '../../setup/test-app.js';

vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

let databaseUrl: string;
/** An empty working folder, so a developer's `.env` cannot leak into the CLI's configuration. */
let cwd: string;

/** The built admin CLI against this file's database, its command lines run inside the test's process (runCli). */
const runCli = (args: string[], options: { stdin?: string; env?: Record<string, string> } = {}) =>
  runBuiltCli(args, { cwd, stdin: options.stdin, env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', ...options.env } });

const ISO_TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const CLIENT_VIEW_KEYS = [
  'client_id',
  'created_at',
  'enabled',
  'grants',
  'heartbeat_interval',
  'id_token_signed_response_alg',
  'name',
  'post_logout_redirect_uris',
  'previous_secret_expires_at',
  'redirect_patterns',
  'scope_descriptions',
  'scopes',
  'sign_in_methods',
  'token_endpoint_auth_method',
  'updated_at',
].sort();

/** A successful run: exit 0, the whole of stdout is one JSON document, nothing JSON-like on stderr. */
function parseSuccess<T = Record<string, unknown>>(result: CliResult): T {
  expect(result, result.stderr).toMatchObject({ code: 0, signal: null });
  expect(result.stdout.endsWith('\n')).toBe(true);
  const lines = result.stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('{"level":'));
  for (const line of lines) expect(() => JSON.parse(line), `stderr line is JSON: ${line}`).toThrow();
  expect(result.stderr).not.toContain('"client_id"');
  return JSON.parse(result.stdout) as T;
}

/** A failed run: exit 1, nothing on stdout, one line on stderr starting with "error:". */
function expectFailure(result: CliResult, message?: RegExp): void {
  expect(result, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toMatchObject({ code: 1, signal: null, stdout: '' });
  expect(result.stderr).toMatch(/^error: [^\n]+\n$/);
  if (message) expect(result.stderr).toMatch(message);
}

/** Every property name anywhere inside `value`. */
function propertyNames(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(propertyNames);
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, inner]) => [key, ...propertyNames(inner)]);
  }
  return [];
}

type ClientView = {
  client_id: string;
  name: string;
  grants: string[];
  redirect_patterns: string[];
  scopes: string[];
  scope_descriptions: Record<string, string>;
  enabled: boolean;
  created_at: string;
  updated_at: string;
  previous_secret_expires_at: string | null;
};
type CreatedClient = ClientView & { client_secret: string };

const UNKNOWN_ID = 'no-such-client-id';

// Two clients registered once for the whole file; later commands work on them.
let alphaRun: CliResult;
let betaRun: CliResult;
let alpha: CreatedClient;
let beta: CreatedClient;

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-cli-'));
  alphaRun = await runCli([
    'client:create',
    '--name',
    'Alpha Planner',
    '--grant',
    'authorization_code',
    '--grant',
    'client_credentials',
    '--redirect',
    'http://127.0.0.1/callback',
    '--redirect',
    'http://192.168.0.0/16:*/callback',
    '--scope',
    'notification:subscribe',
    '--scope',
    'reports:read',
  ]);
  betaRun = await runCli(['client:create', '--name', 'Beta']);
});

afterAll(async () => {
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

describe('client:create', () => {
  it('prints exactly one JSON object with the new client and its secret, keeping every repeated flag', () => {
    alpha = parseSuccess<CreatedClient>(alphaRun);
    expect(Object.keys(alpha).sort()).toEqual([...CLIENT_VIEW_KEYS, 'client_secret'].sort());
    expect(alpha).toEqual({
      client_id: expect.any(String),
      client_secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      name: 'Alpha Planner',
      grants: ['authorization_code', 'client_credentials'],
      redirect_patterns: ['http://127.0.0.1/callback', 'http://192.168.0.0/16:*/callback'],
      scopes: ['notification:subscribe', 'reports:read'],
      enabled: true,
      created_at: expect.stringMatching(ISO_TIMESTAMP),
      updated_at: expect.stringMatching(ISO_TIMESTAMP),
      previous_secret_expires_at: null,
      scope_descriptions: {},
      sign_in_methods: ['local'],
      token_endpoint_auth_method: 'client_secret_basic',
      post_logout_redirect_uris: [],
      id_token_signed_response_alg: 'RS256',
      heartbeat_interval: null,
    });
    expect(alpha.client_id.length).toBeGreaterThan(0);
    expect(alphaRun.stderr).not.toContain(alpha.client_secret);
  });

  it('defaults the grants to authorization_code and refresh_token, with no redirects or scopes', () => {
    beta = parseSuccess<CreatedClient>(betaRun);
    expect(beta).toEqual({
      client_id: expect.any(String),
      client_secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      name: 'Beta',
      grants: ['authorization_code', 'refresh_token'],
      redirect_patterns: [],
      scopes: [],
      enabled: true,
      created_at: expect.stringMatching(ISO_TIMESTAMP),
      updated_at: expect.stringMatching(ISO_TIMESTAMP),
      previous_secret_expires_at: null,
      scope_descriptions: {},
      sign_in_methods: ['local'],
      token_endpoint_auth_method: 'client_secret_basic',
      post_logout_redirect_uris: [],
      id_token_signed_response_alg: 'RS256',
      heartbeat_interval: null,
    });
    expect(beta.client_id).not.toBe(alpha.client_id);
    expect(beta.client_secret).not.toBe(alpha.client_secret);
    expect(betaRun.stderr).not.toContain(beta.client_secret);
  });

  it('stores only a hash of the secret', async () => {
    const rows = await query<{ secret_hash: Buffer }>(databaseUrl, 'SELECT secret_hash FROM clients WHERE id = $1', [alpha.client_id]);
    expect(rows).toHaveLength(1);
    expect(rows[0].secret_hash.toString('utf8')).not.toContain(alpha.client_secret);
    expect(rows[0].secret_hash.toString('base64url')).not.toBe(alpha.client_secret);
  });

  it('fails without --name', async () => {
    expectFailure(await runCli(['client:create', '--grant', 'authorization_code']), /--name/);
  });

  it('refuses a name that is already taken', async () => {
    expectFailure(await runCli(['client:create', '--name', 'Alpha Planner']), /already exists/);
  });

  it('refuses a name that differs from a taken one only in case', async () => {
    expectFailure(await runCli(['client:create', '--name', 'ALPHA planner']), /already exists/);
  });

  let publicRangeRun: CliResult;
  let userinfoRun: CliResult;

  it('refuses a redirect range outside the private and loopback ranges', async () => {
    publicRangeRun = await runCli(['client:create', '--name', 'Public Range', '--redirect', 'http://8.8.8.0/24:*/cb']);
    expectFailure(publicRangeRun, /redirect pattern .*8\.8\.8\.0\/24:\*\/cb/);
  });

  it('refuses a redirect URL with user information', async () => {
    userinfoRun = await runCli(['client:create', '--name', 'With Userinfo', '--redirect', 'http://user:pw@10.0.0.1/cb']);
    expectFailure(userinfoRun, /redirect pattern .*http:\/\/user:pw@10\.0\.0\.1\/cb/);
  });

  it('says why a redirect pattern is refused', () => {
    expect(publicRangeRun.stderr).toBe(
      'error: redirect pattern "http://8.8.8.0/24:*/cb" address range must lie within private or loopback addresses\n',
    );
    expect(userinfoRun.stderr).toBe('error: redirect pattern "http://user:pw@10.0.0.1/cb" must not contain user information\n');
  });

  it('refuses a * anywhere but the port of an address range, instead of storing it as a literal URL', async () => {
    expectFailure(
      await runCli(['client:create', '--name', 'Wildcard', '--redirect', 'http://example.com/*']),
      /redirect pattern "http:\/\/example.com\/\*" may contain \* only as the port of an address range/,
    );
  });

  it('refuses an unknown grant', async () => {
    expectFailure(await runCli(['client:create', '--name', 'Password Grant', '--grant', 'password']), /grant/);
  });

  it('registered nothing for the refused commands', async () => {
    const rows = await query<{ name: string }>(databaseUrl, 'SELECT name FROM clients ORDER BY created_at');
    expect(rows.map((row) => row.name)).toEqual(['Alpha Planner', 'Beta']);
  });
});

describe('client:list', () => {
  it('prints a JSON array of the registered clients without secrets or hashes', async () => {
    const list = parseSuccess<ClientView[]>(await runCli(['client:list']));
    expect(Array.isArray(list)).toBe(true);
    expect(list).toHaveLength(2);
    const { client_secret: _alphaSecret, ...alphaView } = alpha;
    const { client_secret: _betaSecret, ...betaView } = beta;
    expect(list).toEqual([alphaView, betaView]);
    for (const client of list) expect(Object.keys(client).sort()).toEqual(CLIENT_VIEW_KEYS);
    const names = propertyNames(list);
    expect(names).not.toContain('client_secret');
    expect(names.filter((name) => /hash/i.test(name))).toEqual([]);
  });
});

describe('client:show', () => {
  it('prints that client, never its secret', async () => {
    const run = await runCli(['client:show', alpha.client_id]);
    const shown = parseSuccess<ClientView>(run);
    const { client_secret: _secret, ...alphaView } = alpha;
    expect(shown).toEqual(alphaView);
    expect(propertyNames(shown).filter((name) => /secret$|hash/i.test(name))).toEqual([]);
    expect(run.stdout).not.toContain(alpha.client_secret);
  });

  it('fails for an unknown id', async () => {
    expectFailure(await runCli(['client:show', UNKNOWN_ID]), new RegExp(UNKNOWN_ID));
  });

  it('fails without an id', async () => {
    expectFailure(await runCli(['client:show']));
  });
});

describe('client:rotate-secret', () => {
  it('prints a new secret and keeps the previous one valid for about 24 hours', async () => {
    const run = await runCli(['client:rotate-secret', beta.client_id]);
    const rotated = parseSuccess<CreatedClient>(run);
    expect(Object.keys(rotated).sort()).toEqual([...CLIENT_VIEW_KEYS, 'client_secret'].sort());
    expect(rotated).toMatchObject({
      client_id: beta.client_id,
      name: 'Beta',
      grants: beta.grants,
      enabled: true,
      client_secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      previous_secret_expires_at: expect.stringMatching(ISO_TIMESTAMP),
    });
    expect(rotated.client_secret).not.toBe(beta.client_secret);
    const expiresIn = Date.parse(rotated.previous_secret_expires_at!) - Date.now();
    expect(Math.abs(expiresIn - 86_400_000)).toBeLessThan(60_000);
    expect(run.stderr).not.toContain(rotated.client_secret);
    expect(run.stderr).not.toContain(beta.client_secret);

    const shown = parseSuccess<ClientView>(await runCli(['client:show', beta.client_id]));
    expect(shown.previous_secret_expires_at).toBe(rotated.previous_secret_expires_at);
    expect(shown).not.toHaveProperty('client_secret');
  });

  it('fails for an unknown id', async () => {
    expectFailure(await runCli(['client:rotate-secret', UNKNOWN_ID]), new RegExp(UNKNOWN_ID));
  });
});

describe('client:disable and client:enable', () => {
  it('disable prints the client with enabled false, and client:show agrees', async () => {
    const disabled = parseSuccess<ClientView>(await runCli(['client:disable', alpha.client_id]));
    expect(Object.keys(disabled).sort()).toEqual(CLIENT_VIEW_KEYS);
    expect(disabled).toMatchObject({ client_id: alpha.client_id, name: 'Alpha Planner', enabled: false });
    const shown = parseSuccess<ClientView>(await runCli(['client:show', alpha.client_id]));
    expect(shown.enabled).toBe(false);
  });

  it('enable prints the client with enabled true, and client:show agrees', async () => {
    const enabled = parseSuccess<ClientView>(await runCli(['client:enable', alpha.client_id]));
    expect(Object.keys(enabled).sort()).toEqual(CLIENT_VIEW_KEYS);
    expect(enabled).toMatchObject({ client_id: alpha.client_id, name: 'Alpha Planner', enabled: true });
    const shown = parseSuccess<ClientView>(await runCli(['client:show', alpha.client_id]));
    expect(shown.enabled).toBe(true);
  });

  it('disable fails for an unknown id', async () => {
    expectFailure(await runCli(['client:disable', UNKNOWN_ID]), new RegExp(UNKNOWN_ID));
  });

  it('enable fails for an unknown id', async () => {
    expectFailure(await runCli(['client:enable', UNKNOWN_ID]), new RegExp(UNKNOWN_ID));
  });
});

describe('user:create', () => {
  const PASSWORD = 'correct horse battery';

  it('reads the password from stdin, prints {id, username, created_at} and stores an argon2id hash', async () => {
    const run = await runCli(['user:create', '--username', 'alice'], { stdin: `${PASSWORD}\n` });
    const user = parseSuccess<{ id: string; username: string; enabled: boolean; created_at: string }>(run);
    expect(Object.keys(user).sort()).toEqual(['created_at', 'enabled', 'id', 'provider', 'username']);
    expect(user).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
      username: 'alice',
      provider: null,
      enabled: true,
      created_at: expect.stringMatching(ISO_TIMESTAMP),
    });
    expect(run.stdout).not.toContain(PASSWORD);
    expect(run.stderr).not.toContain(PASSWORD);

    const rows = await query<{ id: string; username: string; password_hash: string }>(
      databaseUrl,
      'SELECT id, username, password_hash FROM portal_users',
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: user.id, username: 'alice' });
    expect(rows[0].password_hash).toMatch(/^\$argon2id\$/);
    expect(rows[0].password_hash).not.toContain(PASSWORD);
  });

  it('fails on empty stdin', async () => {
    expectFailure(await runCli(['user:create', '--username', 'bob'], { stdin: '' }), /password/);
  });

  it('fails on an empty first line', async () => {
    expectFailure(await runCli(['user:create', '--username', 'bob'], { stdin: '\n' }), /password/);
  });

  it('fails on a 7-character password', async () => {
    expectFailure(await runCli(['user:create', '--username', 'bob'], { stdin: 'sevench\n' }), /password/);
  });

  it('fails for a username that is already taken', async () => {
    expectFailure(await runCli(['user:create', '--username', 'alice'], { stdin: `${PASSWORD}\n` }), /already exists/);
  });

  it('fails for a username that differs from a taken one only in case', async () => {
    expectFailure(await runCli(['user:create', '--username', 'ALICE'], { stdin: `${PASSWORD}\n` }), /already exists/);
  });

  it('fails without --username', async () => {
    expectFailure(await runCli(['user:create'], { stdin: `${PASSWORD}\n` }), /--username/);
  });

  it('created nothing for the refused commands', async () => {
    const rows = await query<{ username: string }>(databaseUrl, 'SELECT username FROM portal_users');
    expect(rows.map((row) => row.username)).toEqual(['alice']);
  });
});

describe('keys:rotate', () => {
  let storedRetiredExpiry: string | undefined;
  let printedRetiredExpiry: string | undefined;
  let activatesAt: string | undefined;

  beforeAll(async () => {
    // The service creates the first key when it starts; the CLI never does.
    await (await startTestApp({}, databaseUrl)).close();
  });

  it('publishes a new key of each algorithm that signs after KEY_ACTIVATION_DELAY, retiring the previous ones then', async () => {
    const before = await query<{ kid: string; alg: string }>(databaseUrl, 'SELECT kid, alg FROM signing_keys WHERE retired_at IS NULL ORDER BY alg');
    expect(before.map((key) => key.alg)).toEqual(['ES256', 'RS256']);

    const rotated = parseSuccess<{ kid: string; alg: string; created_at: string; activates_at: string; retired: { kid: string; expires_at: string } }[]>(
      await runCli(['keys:rotate']),
    );
    expect(rotated.map((key) => key.alg)).toEqual(['ES256', 'RS256']);
    for (const [index, key] of rotated.entries()) {
      expect(Object.keys(key).sort()).toEqual(['activates_at', 'alg', 'created_at', 'kid', 'retired']);
      expect(key).toEqual({
        kid: expect.any(String),
        alg: before[index].alg,
        created_at: expect.stringMatching(ISO_TIMESTAMP),
        activates_at: expect.stringMatching(ISO_TIMESTAMP),
        retired: { kid: before[index].kid, expires_at: expect.stringMatching(ISO_TIMESTAMP) },
      });
      // It signs 60 s (the JWKS's cache lifetime) after the rotation, by default.
      expect(Date.parse(key.activates_at) - Date.parse(key.created_at)).toBe(60_000);
      expect(key.kid).not.toBe(before[index].kid);
      expect(Date.parse(key.retired.expires_at)).toBeGreaterThan(Date.now());
    }
    activatesAt = rotated[0].activates_at;
    expect(rotated[1].activates_at).toBe(activatesAt);

    const active = await query<{ kid: string }>(databaseUrl, 'SELECT kid FROM signing_keys WHERE retired_at IS NULL ORDER BY alg');
    expect(active).toEqual(rotated.map((key) => ({ kid: key.kid })));
    const retired = await query<{ expires_at: Date }>(databaseUrl, 'SELECT expires_at FROM signing_keys WHERE kid = $1 AND retired_at IS NOT NULL', [
      before[0].kid,
    ]);
    expect(retired).toHaveLength(1);
    // The old key signs until then, and stays published as long as the longest token lifetime (1 h by default).
    expect(Date.parse(rotated[0].retired.expires_at) - Date.parse(rotated[0].activates_at)).toBe(3_600_000);
    expect(Math.abs(Date.parse(rotated[0].retired.expires_at) - retired[0].expires_at.getTime())).toBeLessThan(1_000);
    storedRetiredExpiry = retired[0].expires_at.toISOString();
    printedRetiredExpiry = rotated[0].retired.expires_at;
  });

  it('prints the retired key expiry that was stored', () => {
    expect(printedRetiredExpiry).toBe(storedRetiredExpiry);
  });

  it('keys:list shows the new keys pending until their activation, and the old ones active until then', async () => {
    const listed = parseSuccess<{ alg: string; status: string; activates_at: string; retired_at: string | null }[]>(await runCli(['keys:list']));
    expect(listed.map(({ alg, status, activates_at, retired_at }) => ({ alg, status, activates_at, retired_at }))).toEqual([
      { alg: 'ES256', status: 'pending', activates_at: activatesAt, retired_at: null },
      { alg: 'RS256', status: 'pending', activates_at: activatesAt, retired_at: null },
      { alg: 'ES256', status: 'active', activates_at: expect.stringMatching(ISO_TIMESTAMP), retired_at: activatesAt },
      { alg: 'RS256', status: 'active', activates_at: expect.stringMatching(ISO_TIMESTAMP), retired_at: activatesAt },
    ]);
  });

  it('refuses a second rotation while the new key waits to sign', async () => {
    expectFailure(await runCli(['keys:rotate']), new RegExp(`already waits to sign, from ${activatesAt!.replace(/\./g, '\\.')}: rotate again once it signs`));
  });
});

describe('the CLI itself', () => {
  it('fails for an unknown command', async () => {
    expectFailure(await runCli(['client:frobnicate']), /client:frobnicate/);
  });

  it('prints help and exits 0 with --help', async () => {
    const run = await runCli(['--help']);
    expect(run).toMatchObject({ code: 0, signal: null });
    for (const command of [
      'client:create',
      'client:list',
      'client:show',
      'client:update',
      'client:rotate-secret',
      'client:disable',
      'client:enable',
      'client:delete',
      'user:create',
      'user:list',
      'user:unlock',
      'user:set-password',
      'user:disable',
      'user:enable',
      'grants:revoke',
      'keys:list',
      'keys:rotate',
      'keys:revoke',
      'notification:publish',
    ]) {
      expect(run.stdout).toContain(command);
    }
  });

  it("writes through its command line's streams only, never the test process's own", async () => {
    const written = [vi.spyOn(process.stdout, 'write'), vi.spyOn(process.stderr, 'write')];
    try {
      const runs = [
        await runCli(['--help']),
        await runCli([]),
        await runCli(['client:list', '--format', 'table']),
        await runCli(['client:show', UNKNOWN_ID]),
        await runCli(['client:disable', beta.client_id]),
        await runCli(['client:enable', beta.client_id]),
      ];
      expect(runs.map((run) => run.code)).toEqual([0, 1, 0, 1, 0, 0]);
      expect(runs.every((run) => run.stdout !== '' || run.stderr !== '')).toBe(true);
      for (const spy of written) expect(spy).not.toHaveBeenCalled();
    } finally {
      for (const spy of written) spy.mockRestore();
    }
  });

  it('fails naming the variable when the configuration is invalid', async () => {
    expectFailure(await runCli(['client:list'], { env: { PORT: 'abc' } }), /^error: Invalid configuration: PORT must be an integer number \(got "abc"\)$/m);
  });
});

describe('client:create for the device flow (RFC 8628)', () => {
  it('takes the grant by its full name or the alias device_code, and stores the full name', async () => {
    const full = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Bridge TV', '--grant', 'urn:ietf:params:oauth:grant-type:device_code', '--grant', 'refresh_token']));
    const alias = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Galley TV', '--grant', 'device_code']));
    expect(full.grants).toEqual(['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token']);
    expect(alias.grants).toEqual(['urn:ietf:params:oauth:grant-type:device_code']);
    const [stored] = await query<{ grants: string[] }>(databaseUrl, 'SELECT grants FROM clients WHERE id = $1', [alias.client_id]);
    expect(stored.grants).toEqual(['urn:ietf:params:oauth:grant-type:device_code']);
  });
});

describe('--format', () => {
  it('prints a list as a table for people, one row per record under a header', async () => {
    const run = await runCli(['client:list', '--format', 'table']);
    expect(run, run.stderr).toMatchObject({ code: 0 });
    const [header, rule, ...rows] = run.stdout.trimEnd().split('\n');
    expect(header.split(/\s{2,}/)).toEqual(expect.arrayContaining(['client_id', 'name', 'grants', 'scopes', 'enabled']));
    expect(rule).toMatch(/^[-\s]+$/);
    expect(rows.map((row) => row.split(/\s{2,}/)[1])).toEqual(expect.arrayContaining(['Alpha Planner', 'Beta']));
    expect(() => JSON.parse(run.stdout)).toThrow();
  });

  it('prints one record as field and value rows, also as --format=table', async () => {
    const [client] = parseSuccess<ClientView[]>(await runCli(['client:list']));
    const run = await runCli(['client:show', client.client_id, '--format=table']);
    expect(run, run.stderr).toMatchObject({ code: 0 });
    expect(run.stdout).toMatch(new RegExp(`^client_id +${client.client_id}$`, 'm'));
    expect(run.stdout).toMatch(/^field +value$/m);
  });

  it('fits 100 columns for a client with long values, cutting them with "…", while JSON keeps every value', async () => {
    const redirects = Array.from({ length: 8 }, (_, index) => `http://10.${index}.0.0/16:*/a/rather/long/callback/path`);
    const long = parseSuccess<ClientView>(
      await runCli(['client:create', '--name', `Long ${'n'.repeat(90)}`, ...redirects.flatMap((redirect) => ['--redirect', redirect]), '--scope', 'notification:subscribe']),
    );
    for (const args of [['client:list'], ['client:show', long.client_id], ['keys:list'], ['user:list']]) {
      const run = await runCli([...args, '--format', 'table']);
      expect(run.code, run.stderr).toBe(0);
      for (const line of run.stdout.trimEnd().split('\n')) expect(line.length, `${args[0]}: ${line}`).toBeLessThanOrEqual(100);
    }
    const table = (await runCli(['client:list', '--format', 'table'])).stdout;
    expect(table.split('\n')[0].split(/\s{2,}/)).toEqual(['client_id', 'name', 'enabled', 'grants', 'scopes', 'redirect_patterns']);
    expect(table).toMatch(new RegExp(`^${long.client_id}  Long n+… .*…$`, 'm'));
    const listed = parseSuccess<ClientView[]>(await runCli(['client:list'])).find((client) => client.client_id === long.client_id);
    expect(listed?.redirect_patterns).toEqual(redirects);
  }, 120_000);

  it('keeps JSON with --format json, and refuses any other format', async () => {
    expect(Array.isArray(parseSuccess(await runCli(['client:list', '--format', 'json'])))).toBe(true);
    expectFailure(await runCli(['client:list', '--format', 'xml']), /--format must be json or table \(got "xml"\)/);
  });
});

describe('the voyage-connect bin, as an operator gets it', () => {
  const projectRoot = fileURLToPath(new URL('../../../', import.meta.url));

  /** Runs `node <file>` as npm's bin link would run it through the shebang: from anywhere, with only PATH and DATABASE_URL. */
  const runFile = (file: string, args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [file, ...args], { cwd, env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
      child.stdin.end();
    });

  it('package.json names the built CLI as the voyage-connect bin, an ES module starting with a node shebang', async () => {
    const manifest = JSON.parse(await readFile(join(projectRoot, 'package.json'), 'utf8')) as { bin: Record<string, string>; type: string };
    expect(manifest.bin).toEqual({ 'voyage-connect': 'dist/cli.js' });
    expect(manifest.type).toBe('module');
    const built = await readFile(join(projectRoot, manifest.bin['voyage-connect']), 'utf8');
    expect(built.split('\n')[0]).toBe('#!/usr/bin/env node');
    expect(built).toMatch(/^import /m);
  });

  it('runs every command from the file package.json names, printing the same JSON', async () => {
    const manifest = JSON.parse(await readFile(join(projectRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    const bin = join(projectRoot, manifest.bin['voyage-connect']);
    const help = await runFile(bin, ['--help']);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^Usage: voyage-connect \[options\] \[command\]/);
    expect(help.stdout).toContain('grants:revoke');
    const list = await runFile(bin, ['client:list']);
    expect(list.code, list.stderr).toBe(0);
    expect(Array.isArray(JSON.parse(list.stdout))).toBe(true);
  });
});

describe('the CLI as a process, as the other tests run it inside theirs', () => {
  const runProcess = (args: string[], options: { stdin?: string; env?: Record<string, string> } = {}) =>
    runCliProcess(args, { cwd, stdin: options.stdin, env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', ...options.env } });

  it('reads piped stdin, prints one JSON document, writes the security events on stderr as JSON lines, and exits 0', async () => {
    const created = parseSuccess<{ username: string }>(await runProcess(['user:create', '--username', 'process-user'], { stdin: 'correct horse battery\n' }));
    expect(created.username).toBe('process-user');
    const disabling = await runProcess(['user:disable', '--username', 'process-user']);
    expect(parseSuccess<{ enabled: boolean }>(disabling).enabled).toBe(false);
    expect(securityEvents(disabling)).toEqual([expect.objectContaining({ level: 'info', event: 'user.disabled', reason: 'cli', username: 'process-user' })]);
  });

  it('prints a table with --format table', async () => {
    const run = await runProcess(['client:show', alpha.client_id, '--format', 'table']);
    expect(run, run.stderr).toMatchObject({ code: 0, signal: null, stderr: '' });
    expect(run.stdout).toMatch(/^field\s+value\n/);
  });

  it('exits 1 with one error line: a refused command, an unknown command, an invalid configuration, an unknown format', async () => {
    expectFailure(await runProcess(['client:show', UNKNOWN_ID]), new RegExp(UNKNOWN_ID));
    expectFailure(await runProcess(['client:frobnicate']), /client:frobnicate/);
    expectFailure(await runProcess(['client:list'], { env: { PORT: 'abc' } }), /^error: Invalid configuration: PORT must be an integer number \(got "abc"\)$/m);
    expectFailure(await runProcess(['client:list', '--format', 'xml']), /--format must be json or table \(got "xml"\)/);
  });
});
