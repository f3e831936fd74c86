import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { open, parseKeyEncryptionKey } from '../../../src/keys/key-encryption.js';
import { expectFailure, parseSuccess } from '../../setup/cli-results.js';
import { createTestDatabase, query } from '../../setup/database.js';
import { freePort } from '../../setup/free-port.js';
import { CLI_TEST_TIMEOUT_MS, type CliResult, runCli as runBuiltCli } from '../../setup/processes.js';
import { startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

// The idp:* commands and --sign-in, run as operators run them (the built CLI, each command line
// run in this process by runCli) against a real OpenID provider (oidc-provider in its own process), whose discovery
// document idp:create fetches and checks.

const FRONTEND_URL = 'https://connect.example.com';
const KEK = randomBytes(32).toString('hex');

/** Every client secret given to a command: none may ever be printed. */
const secrets: string[] = [];
const newSecret = (label: string) => {
  const secret = `${label}-${randomBytes(18).toString('base64url')}`;
  secrets.push(secret);
  return secret;
};

/** Every run of this file, for the last test to search for the secrets. */
const runs: { args: string[]; result: CliResult }[] = [];

let databaseUrl: string;
let cwd: string;
let upstream: UpstreamProvider;

/** The built CLI with this file's database, FRONTEND_URL and KEYS_ENCRYPTION_KEY (`env` may take one out by giving it undefined). */
async function runCli(args: string[], options: { stdin?: string; env?: Record<string, string | undefined> } = {}): Promise<CliResult> {
  const env = { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', FRONTEND_URL, KEYS_ENCRYPTION_KEY: KEK, ...options.env };
  const defined = Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
  const result = await runBuiltCli(args, { cwd, stdin: options.stdin, env: defined });
  runs.push({ args, result });
  return result;
}

type ProviderView = { name: string; issuer: string; client_id: string; redirect_uri: string; mode: string; scopes: string[]; display_name: string; trust_email: boolean };
type ClientView = { client_id: string; name: string; sign_in_methods: string[] };

const createArgs = (name: string, issuer = upstream.issuer, ...more: string[]) => ['idp:create', '--name', name, '--issuer', issuer, '--client-id', 'voyage-connect', ...more];
const storedProvider = async (name: string) =>
  (await query<{ name: string; client_id: string; client_secret_sealed: Buffer | null; row: string }>(databaseUrl, 'SELECT p.*, row_to_json(p)::text AS row FROM identity_providers p WHERE name = $1', [name]))[0];
const providerNames = async () => (await query<{ name: string }>(databaseUrl, 'SELECT name FROM identity_providers ORDER BY name')).map((row) => row.name);
const storedClient = async (id: string) => (await query(databaseUrl, 'SELECT * FROM clients WHERE id = $1', [id]))[0];

/** What KEYS_ENCRYPTION_KEY opens a sealed client secret to (its context is the provider's name). */
const unseal = (name: string, sealed: Buffer) => open(parseKeyEncryptionKey(KEK), `idp:${name}`, sealed);

beforeAll(async () => {
  [databaseUrl, upstream, cwd] = await Promise.all([
    createTestDatabase(),
    startUpstreamProvider({ clients: [{ client_id: 'voyage-connect', client_secret: 'unused-here', redirect_uris: [`${FRONTEND_URL}/sso/callback/corp`] }] }),
    mkdtemp(join(tmpdir(), 'voyage-connect-idp-cli-')),
  ]);
});
afterAll(async () => {
  await upstream?.stop();
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

/** Each test runs the CLI (a process of about a second) up to twenty times in a row: room for a slow machine. */
const CLI_RUNS_TIMEOUT = 90_000;

describe('idp:create', { timeout: CLI_RUNS_TIMEOUT }, () => {
  it('registers a provider whose discovery document checks out and prints exactly its view, its redirect_uri under FRONTEND_URL', async () => {
    const secret = newSecret('corp');
    const created = parseSuccess<ProviderView>(
      await runCli(createArgs('corp', upstream.issuer, '--display-name', 'Fleet account', '--scope', 'openid', '--scope', 'email', '--mode', 'relay', '--trust-email'), { stdin: `${secret}\n` }),
    );
    expect(created).toStrictEqual({
      name: 'corp',
      issuer: upstream.issuer,
      client_id: 'voyage-connect',
      redirect_uri: `${FRONTEND_URL}/sso/callback/corp`,
      mode: 'relay',
      scopes: ['openid', 'email'],
      display_name: 'Fleet account',
      trust_email: true,
    });
    expect(parseSuccess(await runCli(['idp:show', 'corp']))).toStrictEqual(created);
    expect(parseSuccess(await runCli(['idp:list']))).toStrictEqual([created]);

    const defaults = parseSuccess<ProviderView>(await runCli(createArgs('defaults'), { stdin: `${newSecret('defaults')}\n` }));
    expect(defaults).toMatchObject({ mode: 'broker', scopes: ['openid', 'profile', 'email', 'offline_access'], display_name: 'defaults', redirect_uri: `${FRONTEND_URL}/sso/callback/defaults`, trust_email: false });
    expect(parseSuccess<ProviderView[]>(await runCli(['idp:list'])).map((provider) => provider.name)).toEqual(['corp', 'defaults']);
  });

  it('stores the client secret only sealed with KEYS_ENCRYPTION_KEY; an empty line registers a public client', async () => {
    const secret = newSecret('sealed');
    parseSuccess(await runCli(createArgs('sealed'), { stdin: `${secret}\nsecond line ignored\n` }));
    const stored = await storedProvider('sealed');
    expect(stored.client_secret_sealed).toBeInstanceOf(Buffer);
    expect(stored.client_secret_sealed!.includes(Buffer.from(secret))).toBe(false);
    expect(stored.row).not.toContain(secret);
    expect(unseal('sealed', stored.client_secret_sealed!)).toBe(secret);

    parseSuccess(await runCli(createArgs('public'), { stdin: '\n' }));
    expect((await storedProvider('public')).client_secret_sealed).toBeNull();
  });

  it('exits 1 with the reason and registers nothing when the discovery fails: nothing listening, another issuer, no document', async () => {
    const closedPort = await freePort();
    const failures: [string, RegExp][] = [
      [
        `http://127.0.0.1:${closedPort}`,
        /^error: the discovery document http:\/\/127\.0\.0\.1:\d+\/\.well-known\/openid-configuration could not be used: it did not answer in time or refused the connection\n$/,
      ],
      // The document is found (localhost is the provider's address too), but it names http://127.0.0.1:PORT.
      [`http://localhost:${upstream.port}`, /localhost:\d+\/\.well-known\/openid-configuration could not be used: its discovery document names another issuer: http:\/\/127\.0\.0\.1:\d+\n$/],
      // The same issuer but for a trailing slash is another issuer: users are linked by it.
      [`${upstream.issuer}/`, /could not be used: its discovery document names the issuer http:\/\/127\.0\.0\.1:\d+, not http:\/\/127\.0\.0\.1:\d+\/ as given\n$/],
      [`${upstream.issuer}/realms/none`, /\/realms\/none\/\.well-known\/openid-configuration could not be used: it answered HTTP 404 where an OpenID provider answers 200\n$/],
    ];
    for (const [issuer, reason] of failures) {
      expectFailure(await runCli(createArgs('unchecked', issuer), { stdin: `${newSecret('unchecked')}\n` }), reason);
    }
    expect(await providerNames()).not.toContain('unchecked');
  });

  it('refuses a plain http issuer off loopback, bad names, scopes and modes, and registers nothing', async () => {
    const before = await providerNames();
    const refusals: [string[], RegExp][] = [
      [createArgs('offloop', 'http://sso.example.com/realms/fleet'), /issuer must be an https URL \(plain http only on a loopback address\)/],
      [createArgs('notaurl', 'sso.example.com'), /issuer must be an absolute URL/],
      [createArgs('query', `${upstream.issuer}?realm=fleet`), /issuer must not have a query, a fragment or credentials/],
      [createArgs('Corp'), /name must be 1 to 63 lowercase letters, digits, "-" or "_"/],
      [createArgs('local'), /name must not be "local"/],
      [createArgs('x'.repeat(64)), /name must be 1 to 63/],
      [createArgs('-dash'), /name must be 1 to 63/],
      [createArgs('scopes', upstream.issuer, '--scope', 'open id'), /each --scope must be a scope token/],
      [createArgs('scopes', upstream.issuer, '--scope', 'openid', '--scope', 'openid'), /--scope must not name a scope twice/],
      [createArgs('mode', upstream.issuer, '--mode', 'proxy'), /mode must be one of: broker, relay/],
      [createArgs('spaced', upstream.issuer, '--client-id', 'two words'), /--client-id must be printable ASCII without spaces/],
    ];
    for (const [args, message] of refusals) expectFailure(await runCli(args, { stdin: `${newSecret('refused')}\n` }), message);
    const missing = await runCli(['idp:create', '--name', 'noissuer', '--client-id', 'x']);
    expect(missing).toMatchObject({ code: 1, stdout: '', stderr: "error: required option '--issuer <url>' not specified\n" });
    expect(await providerNames()).toEqual(before);
  });

  it('without KEYS_ENCRYPTION_KEY refuses, naming it, and registers nothing', async () => {
    const run = await runCli(createArgs('nokek'), { stdin: `${newSecret('nokek')}\n`, env: { KEYS_ENCRYPTION_KEY: undefined } });
    expectFailure(run, /needs KEYS_ENCRYPTION_KEY: its client secret and the tokens it issues are stored encrypted with it/);
    expect(await providerNames()).not.toContain('nokek');
  });

  it('refuses a second provider of the same name, leaving the first as it was', async () => {
    const before = await storedProvider('corp');
    expectFailure(await runCli(createArgs('corp'), { stdin: `${newSecret('twin')}\n` }), /an identity provider named "corp" already exists/);
    expect(await storedProvider('corp')).toEqual(before);
  });
});

describe('idp:update, idp:rotate-secret, idp:delete', { timeout: CLI_RUNS_TIMEOUT }, () => {
  it('idp:update changes what is given and nothing else; a bad value changes nothing', async () => {
    const before = parseSuccess<ProviderView>(await runCli(['idp:show', 'defaults']));
    const updated = parseSuccess<ProviderView>(await runCli(['idp:update', 'defaults', '--display-name', 'Fleet staff', '--scope', 'openid', '--scope', 'profile', '--mode', 'relay']));
    expect(updated).toStrictEqual({ ...before, display_name: 'Fleet staff', scopes: ['openid', 'profile'], mode: 'relay' });
    const moved = parseSuccess<ProviderView>(await runCli(['idp:update', 'defaults', '--client-id', 'voyage-2']));
    expect(moved).toStrictEqual({ ...updated, client_id: 'voyage-2' });
    const trusted = parseSuccess<ProviderView>(await runCli(['idp:update', 'defaults', '--trust-email']));
    expect(trusted).toStrictEqual({ ...moved, trust_email: true });
    expect(parseSuccess(await runCli(['idp:update', 'defaults', '--no-trust-email']))).toStrictEqual(moved);

    const stored = await storedProvider('defaults');
    for (const [args, message] of [
      [[], /nothing to change: give --display-name, --client-id, --scope, --mode, --trust-email or --no-trust-email/],
      [['--mode', 'proxy'], /mode must be one of/],
      [['--scope', 'a"b'], /scope token/],
      [['--display-name', ' padded'], /whitespace/],
    ] as [string[], RegExp][]) {
      expectFailure(await runCli(['idp:update', 'defaults', ...args]), message);
    }
    const issuer = await runCli(['idp:update', 'defaults', '--issuer', 'http://127.0.0.1:1']);
    expect(issuer).toMatchObject({ code: 1, stdout: '' });
    expect(issuer.stderr).toMatch(/unknown option '--issuer'/);
    expect(await storedProvider('defaults')).toEqual(stored);
    expectFailure(await runCli(['idp:update', 'nobody', '--mode', 'broker']), /^error: no identity provider named "nobody"\n$/);
  });

  it('idp:rotate-secret seals the new secret in place of the old one; an empty line makes the client public', async () => {
    const old = (await storedProvider('sealed')).client_secret_sealed!;
    const rotated = newSecret('rotated');
    const view = parseSuccess<ProviderView>(await runCli(['idp:rotate-secret', 'sealed'], { stdin: `${rotated}\n` }));
    expect(view).toMatchObject({ name: 'sealed', issuer: upstream.issuer });
    const sealed = (await storedProvider('sealed')).client_secret_sealed!;
    expect(sealed.equals(old)).toBe(false);
    expect(sealed.includes(Buffer.from(rotated))).toBe(false);
    expect(unseal('sealed', sealed)).toBe(rotated);

    parseSuccess(await runCli(['idp:rotate-secret', 'sealed'], { stdin: '\n' }));
    expect((await storedProvider('sealed')).client_secret_sealed).toBeNull();
    expectFailure(await runCli(['idp:rotate-secret', 'nobody'], { stdin: `${newSecret('nobody')}\n` }), /no identity provider named "nobody"/);
    expectFailure(await runCli(['idp:rotate-secret', 'public'], { stdin: `${newSecret('nokek')}\n`, env: { KEYS_ENCRYPTION_KEY: undefined } }), /needs KEYS_ENCRYPTION_KEY/);
    expect((await storedProvider('public')).client_secret_sealed).toBeNull();
  });

  it('idp:delete is refused while a client signs in with the provider, naming the client, and removes it once none does', async () => {
    const client = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Galley TV', '--sign-in', 'public', '--sign-in', 'local']));
    expectFailure(await runCli(['idp:delete', 'public']), new RegExp(`identity provider "public" is a sign-in method of a client: Galley TV \\(${client.client_id}\\); change their --sign-in first`));
    expect(await providerNames()).toContain('public');

    parseSuccess(await runCli(['client:update', client.client_id, '--sign-in', 'local']));
    const deleted = parseSuccess<ProviderView>(await runCli(['idp:delete', 'public']));
    expect(deleted).toMatchObject({ name: 'public', issuer: upstream.issuer });
    expect(await providerNames()).not.toContain('public');
    expectFailure(await runCli(['idp:delete', 'public']), /no identity provider named "public"/);
    expectFailure(await runCli(['idp:show', 'public']), /no identity provider named "public"/);
  });
});

describe('--sign-in', { timeout: CLI_RUNS_TIMEOUT }, () => {
  it('client:create takes local and registered providers, as options and as the sign-in field of --file; an unknown one creates nothing', async () => {
    const created = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Bridge display', '--sign-in', 'corp']));
    expect(created.sign_in_methods).toEqual(['corp']);
    expect(parseSuccess<ClientView>(await runCli(['client:show', created.client_id])).sign_in_methods).toEqual(['corp']);
    expect(parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Default sign-in'])).sign_in_methods).toEqual(['local']);

    const countClients = async () => (await query<{ count: number }>(databaseUrl, 'SELECT count(*)::int AS count FROM clients'))[0].count;
    const clients = await countClients();
    expectFailure(
      await runCli(['client:create', '--name', 'Unknown sign-in', '--sign-in', 'corp', '--sign-in', 'nowhere']),
      /sign-in method must be "local" or a registered identity provider \(idp:list\); unknown: nowhere/,
    );
    expectFailure(await runCli(['client:create', '--name', 'Bad sign-in', '--sign-in', 'Corp']), /each sign-in method must be "local" or an identity provider name/);
    const file = [JSON.stringify({ name: 'Cabin 1', 'sign-in': ['corp', 'local'] }), JSON.stringify({ name: 'Cabin 2', 'sign-in': 'nowhere' })].join('\n');
    const refusedFile = await runCli(['client:create', '--file', '-'], { stdin: file });
    expect(refusedFile).toMatchObject({ code: 1, stdout: '' });
    expect(refusedFile.stderr).toMatch(/^error: 1 of 2 lines refused; no client was created:\n {2}line 2: sign-in method must be "local" or a registered identity provider \(idp:list\); unknown: nowhere\n$/);
    expect(await countClients()).toBe(clients);

    const fromFile = parseSuccess<ClientView[]>(await runCli(['client:create', '--file', '-'], { stdin: file.split('\n')[0] }));
    expect(parseSuccess<ClientView>(await runCli(['client:show', fromFile[0].client_id])).sign_in_methods).toEqual(['corp', 'local']);
  });

  it('client:update --sign-in replaces the methods; an unknown provider changes nothing', async () => {
    const client = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Chart table']));
    const updated = parseSuccess<ClientView>(await runCli(['client:update', client.client_id, '--sign-in', 'corp', '--sign-in', 'defaults']));
    expect(updated.sign_in_methods).toEqual(['corp', 'defaults']);
    expect((await storedClient(client.client_id)).sign_in).toEqual(['corp', 'defaults']);

    const before = await storedClient(client.client_id);
    expectFailure(await runCli(['client:update', client.client_id, '--sign-in', 'local', '--sign-in', 'nowhere']), /unknown: nowhere/);
    expect(await storedClient(client.client_id)).toEqual(before);
  });

  it('client:list shows the sign-in methods in its table once a client signs in through a provider, within 100 columns', async () => {
    const run = await runCli(['client:list', '--format', 'table']);
    expect(run.code, run.stderr).toBe(0);
    const [header, , ...rows] = run.stdout.trimEnd().split('\n');
    expect(header.split(/\s{2,}/)).toEqual(['client_id', 'name', 'enabled', 'grants', 'scopes', 'redirect_patterns', 'sign_in_methods']);
    const [chartTable] = await query<{ id: string }>(databaseUrl, "SELECT id FROM clients WHERE name = 'Chart table'");
    expect(rows.find((row) => row.startsWith(`${chartTable.id} `))).toMatch(/ corp defaults$/);
    for (const line of run.stdout.trimEnd().split('\n')) expect(line.length, line).toBeLessThanOrEqual(100);
  });
});

describe('tables and user views', { timeout: CLI_RUNS_TIMEOUT }, () => {
  it('idp:list and idp:show print tables within 100 columns', async () => {
    const list = await runCli(['idp:list', '--format', 'table']);
    expect(list.code, list.stderr).toBe(0);
    const [header, , ...rows] = list.stdout.trimEnd().split('\n');
    expect(header.split(/\s{2,}/)).toEqual(['name', 'mode', 'issuer', 'client_id', 'display_name']);
    expect(rows.map((row) => row.split(/\s{2,}/)[0])).toEqual(['corp', 'defaults', 'sealed']);
    const show = await runCli(['idp:show', 'corp', '--format', 'table']);
    expect(show.stdout).toMatch(new RegExp(`^redirect_uri +${FRONTEND_URL}/sso/callback/corp$`, 'm'));
    for (const line of [...list.stdout.split('\n'), ...show.stdout.split('\n')]) expect(line.length, line).toBeLessThanOrEqual(100);
  });

  it('user:list shows provider null for a local user and the provider of a brokered one, also as a table', async () => {
    const local = parseSuccess<{ username: string; provider: string | null }>(await runCli(['user:create', '--username', 'alice'], { stdin: 'correct horse battery\n' }));
    expect(local).toMatchObject({ username: 'alice', provider: null });
    // A brokered user as a first sign-in through the provider leaves it (UsersService.linkUpstream).
    const subject = '3f1c9a7e-5b2d-4e8f-9a6c-1d2e3f4a5b6c';
    await query(databaseUrl, 'INSERT INTO portal_users (username, provider, upstream_issuer, upstream_subject, profile) VALUES ($1, $2, $3, $4, $5)', [
      `corp:${subject}`,
      'corp',
      upstream.issuer,
      subject,
      { preferred_username: 'bob' },
    ]);
    const users = parseSuccess<{ username: string; provider: string | null }[]>(await runCli(['user:list']));
    expect(users.map(({ username, provider }) => ({ username, provider }))).toEqual([
      { username: 'alice', provider: null },
      { username: `corp:${subject}`, provider: 'corp' },
    ]);

    const table = await runCli(['user:list', '--format', 'table']);
    const [header, , ...rows] = table.stdout.trimEnd().split('\n');
    expect(header.split(/\s{2,}/)).toEqual(['id', 'username', 'provider', 'enabled', 'created_at']);
    expect(rows[1].split(/\s{2,}/)[2]).toBe('corp');
    for (const line of table.stdout.trimEnd().split('\n')) expect(line.length, line).toBeLessThanOrEqual(100);
  });
});

it('printed no client secret on any stdout or stderr, whatever the command and however it ended', () => {
  expect(runs.length).toBeGreaterThan(40);
  expect(secrets.length).toBeGreaterThan(10);
  for (const { args, result } of runs) {
    for (const secret of secrets) {
      expect(result.stdout, args.join(' ')).not.toContain(secret);
      expect(result.stderr, args.join(' ')).not.toContain(secret);
    }
  }
});
