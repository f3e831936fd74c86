import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { seal } from '../../../src/keys/key-encryption.js';
import { query } from '../../setup/database.js';
import { freePort } from '../../setup/free-port.js';
import { CLI_TEST_TIMEOUT_MS, runCliProcess, spawnService } from '../../setup/processes.js';

// Each test starts service and CLI processes, one after another: on a busy machine that takes
// longer than the suite's 30 s, so it gets the CLI tests' limit.
vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });
import { startTestApp } from '../../setup/test-app.js';

/** Runs the built service with `env` to its exit; its code, everything it wrote, and how long it took. */
async function refusedStart(env: Record<string, string>) {
  const started = Date.now();
  const service = spawnService({ DATABASE_URL: '', LOG_LEVEL: 'info', ...env });
  const killer = setTimeout(() => service.child.kill('SIGKILL'), 40_000);
  const code = await service.exited;
  clearTimeout(killer);
  return { code, output: service.output(), seconds: (Date.now() - started) / 1000 };
}

/** Something else listening on 127.0.0.1:`port` meanwhile. */
async function occupy(port: number, host = '127.0.0.1'): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return server;
}

/**
 * The mistakes a newcomer makes first, each answered with one line that names the setting and the
 * fix (never a secret), before anything is started that would have to be undone.
 */
describe('start-up errors', () => {
  let dataDir: string;
  const occupied: Server[] = [];
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'voyage-connect-startup-'));
  });
  afterAll(async () => {
    for (const server of occupied) server.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('a taken HTTP port: one line naming PORT and HOST, before an embedded PostgreSQL is made or started', async () => {
    const port = await freePort();
    occupied.push(await occupy(port));
    const folder = join(dataDir, 'http-port');
    const result = await refusedStart({ DATA_DIR: folder, EMBEDDED_PG_PORT: String(await freePort()), PORT: String(port), HOST: '127.0.0.1' });
    expect(result.code).toBe(1);
    expect(result.output).toBe(`PORT ${port} on HOST 127.0.0.1 is in use by another program (another voyage-connect?): stop it, or set PORT to a free port\n`);
    expect(existsSync(join(folder, 'postgres'))).toBe(false);
  });

  it("a taken embedded database port: one line naming EMBEDDED_PG_PORT, before a cluster is made; the CLI says the same", async () => {
    const pgPort = await freePort();
    occupied.push(await occupy(pgPort));
    const folder = join(dataDir, 'pg-port');
    const env = { DATA_DIR: folder, EMBEDDED_PG_PORT: String(pgPort) };
    const line = `EMBEDDED_PG_PORT ${pgPort} on 127.0.0.1 is in use by another program: set EMBEDDED_PG_PORT to a free port (or DATABASE_URL to a PostgreSQL of your own)`;
    const result = await refusedStart({ ...env, PORT: String(await freePort()), HOST: '127.0.0.1' });
    expect(result.code).toBe(1);
    expect(result.output).toBe(`${line}\n`);
    expect(existsSync(join(folder, 'postgres'))).toBe(false);

    const cli = await runCliProcess(['user:list'], { env });
    expect(cli.code).toBe(1);
    expect(cli.stderr).toBe(`error: ${line}\n`);
  });

  it('an unreachable DATABASE_URL: one line naming it without its password, within seconds; the CLI says the same', async () => {
    const databaseUrl = `postgres://app:hunter2-secret@127.0.0.1:${await freePort()}/voyage`;
    const line = new RegExp(`^DATABASE_URL postgres://app@127\\.0\\.0\\.1:\\d+/voyage cannot be reached after 5 s \\(ECONNREFUSED: .*\\): start PostgreSQL there, or fix DATABASE_URL\\n$`);
    const result = await refusedStart({ DATABASE_URL: databaseUrl, PORT: String(await freePort()), HOST: '127.0.0.1' });
    expect(result.code).toBe(1);
    expect(result.output).toMatch(line);
    // It gives up after 5 s, not after a driver's default of minutes; the rest is starting node (slow on a busy machine).
    expect(result.seconds).toBeLessThan(30);

    const cli = await runCliProcess(['user:list'], { env: { DATABASE_URL: databaseUrl } });
    expect(cli.code).toBe(1);
    expect(cli.stderr.replace(/^error: /, '')).toMatch(line);
    expect(cli.stderr).not.toContain('hunter2');
  });

  it('a bad METRICS_ALLOWED_CIDRS: one line, before an embedded PostgreSQL is made', async () => {
    const folder = join(dataDir, 'metrics');
    const result = await refusedStart({ DATA_DIR: folder, METRICS_ALLOWED_CIDRS: 'localhost', PORT: String(await freePort()), HOST: '127.0.0.1' });
    expect(result.code).toBe(1);
    expect(result.output).toBe('Invalid configuration: METRICS_ALLOWED_CIDRS: "localhost" is neither an IPv4/IPv6 address nor a CIDR range (got "localhost")\n');
    expect(existsSync(folder)).toBe(false);
  });

  it('a wrong-length KEYS_ENCRYPTION_KEY: one line that never shows the key, in the service and the CLI', async () => {
    const key = 'c2VjcmV0LWtleS10aGF0LWlzLXRvby1zaG9ydA';
    const line = `Invalid configuration: KEYS_ENCRYPTION_KEY must be 32 bytes as base64 or hex (got a value of ${key.length} characters)`;
    const result = await refusedStart({ DATA_DIR: join(dataDir, 'key'), KEYS_ENCRYPTION_KEY: key, PORT: String(await freePort()) });
    expect(result.code).toBe(1);
    expect(result.output).toBe(`${line}\n`);
    const cli = await runCliProcess(['user:list'], { env: { KEYS_ENCRYPTION_KEY: key } });
    expect(cli.stderr).toBe(`error: ${line}\n`);
  });

  it('an identity provider whose stored client secret KEYS_ENCRYPTION_KEY does not open, or no key at all: one line naming it, and the signing keys left as they were', async () => {
    const kek = randomBytes(32);
    const migrated = await startTestApp();
    await migrated.close();
    const url = migrated.databaseUrl;
    await query(url, `INSERT INTO identity_providers (name, issuer, client_id, client_secret_sealed, display_name, scopes, mode) VALUES ('corp', 'https://login.example.com', 'vc', $1, 'Corp account', '{openid}', 'broker')`, [
      seal(kek, 'idp:corp', 'the-provider-secret'),
    ]);
    const signingKeys = () => query(url, 'SELECT kid, private_key_pem IS NULL AS sealed FROM signing_keys ORDER BY kid');
    const before = await signingKeys();
    const wrongKey = 'KEYS_ENCRYPTION_KEY does not open the client secret of identity provider "corp": set it (in .env) to the key it was stored with, the one idp:create ran with';
    const result = await refusedStart({ DATABASE_URL: url, KEYS_ENCRYPTION_KEY: randomBytes(32).toString('hex'), PORT: String(await freePort()), HOST: '127.0.0.1' });
    expect(result.code).toBe(1);
    expect(result.output.split('\n').filter((text) => text && !text.startsWith('{'))).toEqual([wrongKey]);
    expect(result.output).not.toMatch(/"level":"(error|fatal)"|UpstreamVaultError|    at /);
    // Without a key, the same refusal (the service in this process: the line is the error's message).
    await expect(startTestApp({}, url)).rejects.toThrow(
      /^identity provider "corp" is registered, but KEYS_ENCRYPTION_KEY is not set: set it \(in \.env\) to the key idp:create ran with, as signing in there stores secrets encrypted with it$/,
    );
    // A wrong key sealed nothing on its way out: the right one still opens everything.
    expect(await signingKeys()).toEqual(before);
  });

  it('TLS files that cannot be read, or are no certificate and key, a HOST that is not this machine, a DATA_DIR that is a file, a portal logo that cannot be read or is no image: one line each, before an embedded PostgreSQL is made', async () => {
    const folder = join(dataDir, 'listen');
    const notPem = join(dataDir, 'not-a-certificate.txt');
    await writeFile(notPem, 'hello\n');
    const cases: [Record<string, string>, string | RegExp][] = [
      [{ TLS_CERT_FILE: '/nonexistent/cert.pem', TLS_KEY_FILE: '/nonexistent/key.pem' }, 'Invalid configuration: TLS_CERT_FILE /nonexistent/cert.pem cannot be read (ENOENT)'],
      [{ TLS_CERT_FILE: notPem, TLS_KEY_FILE: notPem }, /^Invalid configuration: TLS_CERT_FILE and TLS_KEY_FILE must be a PEM certificate and its private key \(.*PEM.*\)\n$/],
      [{ DATA_DIR: notPem }, `DATA_DIR ${notPem} is a file, not a folder: set DATA_DIR to a folder this account may write, or DATABASE_URL to a PostgreSQL of your own`],
      [{ PORTAL_LOGO_FILE: '/nonexistent/logo.png' }, 'Invalid configuration: PORTAL_LOGO_FILE /nonexistent/logo.png cannot be read (ENOENT)'],
      [{ HOST: '192.0.2.1' }, 'HOST 192.0.2.1 is not an address of this machine (EADDRNOTAVAIL): set HOST to one of its addresses, 0.0.0.0 for all of them, or 127.0.0.1 for this machine only'],
    ];
    for (const [env, line] of cases) {
      const result = await refusedStart({ DATA_DIR: folder, PORT: String(await freePort()), HOST: '127.0.0.1', ...env });
      expect(result.code, String(line)).toBe(1);
      if (typeof line === 'string') expect(result.output).toBe(`${line}\n`);
      else expect(result.output).toMatch(line);
    }
    expect(existsSync(folder)).toBe(false);
  });
});
