import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { storedKeys } from '../../factories/signing-keys.factory.js';
import { createTestDatabase } from '../../setup/database.js';
import { freePort } from '../../setup/free-port.js';
import { CLI_TEST_TIMEOUT_MS, type CliResult, runCli as runBuiltCli, spawnService } from '../../setup/processes.js';
import { startTestApp } from '../../setup/test-app.js';

vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

/** An empty working folder, so a developer's `.env` cannot leak into the CLI's configuration. */
let cwd: string;
beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-keys-cli-'));
});
afterAll(async () => {
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

/** The built admin CLI against `databaseUrl`, each command line run in this process (runCli), with `env` as its only settings. */
const runCli = (databaseUrl: string, args: string[], env: Record<string, string> = {}) =>
  runBuiltCli(args, { cwd, env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', ...env } });

/** A database a service has started on (and created its first key in), with the service's settings. */
async function serviceDatabase(vars: Record<string, string> = {}): Promise<string> {
  const app = await startTestApp(vars);
  await app.close();
  return app.databaseUrl;
}


function parseSuccess<T>(result: CliResult): T {
  expect(result, result.stderr).toMatchObject({ code: 0, signal: null });
  return JSON.parse(result.stdout) as T;
}

function expectFailure(result: CliResult, message: RegExp): void {
  expect(result, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toMatchObject({ code: 1, signal: null, stdout: '' });
  expect(result.stderr).toMatch(/^error: [^\n]+\n$/);
  expect(result.stderr).toMatch(message);
}

const KEK = randomBytes(32).toString('base64');
const OTHER_KEK = randomBytes(32).toString('hex');

describe('a CLI command never creates or replaces keys implicitly', () => {
  it('leaves an empty key table empty', async () => {
    const url = await createTestDatabase();
    parseSuccess(await runCli(url, ['client:list']));
    expect(await storedKeys(url)).toEqual([]);
  });

  it('leaves the active keys of a service alone when its own SIGNING_ALG differs', async () => {
    const url = await serviceDatabase();
    const before = await storedKeys(url);
    expect(before).toMatchObject([
      { alg: 'ES256', retired_at: null },
      { alg: 'RS256', retired_at: null },
    ]);
    parseSuccess(await runCli(url, ['client:list'], { SIGNING_ALG: 'RS256', CLIENT_TOKEN_TTL: '86400' }));
    expect(await storedKeys(url)).toEqual(before);
  });
});

type Rotated = { kid: string; alg: string; created_at: string; activates_at: string; retired: { kid: string; expires_at: string } };

describe('keys:rotate', () => {
  it("rotates the key of each algorithm, with the stored lifetime, not the CLI's CLIENT_TOKEN_TTL", async () => {
    const url = await serviceDatabase({ CLIENT_TOKEN_TTL: '7200' });
    const old = await storedKeys(url);
    const before = Date.now();
    const rotated = parseSuccess<Rotated[]>(await runCli(url, ['keys:rotate'], { SIGNING_ALG: 'RS256', CLIENT_TOKEN_TTL: '86400' }));
    expect(rotated).toMatchObject([
      { alg: 'ES256', retired: { kid: old[0].kid } },
      { alg: 'RS256', retired: { kid: old[1].kid } },
    ]);
    const stored = await storedKeys(url);
    for (const key of rotated) {
      expect(Object.keys(key).sort()).toEqual(['activates_at', 'alg', 'created_at', 'kid', 'retired']);
      // The old key signs until the new one activates (60 s by default), and is published for 2 h after.
      expect(Date.parse(key.retired.expires_at) - Date.parse(key.activates_at)).toBe(7_200_000);
      expect(Date.parse(key.activates_at) - before).toBeGreaterThanOrEqual(60_000 - 1_000);
      expect(Date.parse(key.activates_at) - before).toBeLessThan(60_000 + 60_000);
      expect(stored.find((row) => row.kid === key.kid)).toMatchObject({ alg: key.alg, retired_at: null, retired_lifetime_seconds: 7200 });
    }
  });

  it('rotates the key of one algorithm with --alg, leaving the other alone', async () => {
    const url = await serviceDatabase();
    const [es256, rs256] = await storedKeys(url);
    const rotated = parseSuccess<Rotated[]>(await runCli(url, ['keys:rotate', '--alg', 'RS256']));
    expect(rotated).toMatchObject([{ alg: 'RS256', retired: { kid: rs256.kid } }]);
    const stored = await storedKeys(url);
    expect(stored.find((row) => row.kid === es256.kid)).toEqual(es256);
    expect(stored.map((row) => row.kid)).toEqual([es256.kid, rs256.kid, rotated[0].kid]);
  });

  it('refuses an --alg it does not sign with, changing nothing', async () => {
    const url = await serviceDatabase();
    const before = await storedKeys(url);
    for (const alg of ['HS256', 'none', 'es256', '']) {
      expectFailure(await runCli(url, ['keys:rotate', '--alg', alg]), new RegExp(`^error: --alg must be ES256 or RS256 \\(got ${JSON.stringify(alg)}\\)`));
    }
    expect(await storedKeys(url)).toEqual(before);
  });

  it('fails on a database no service has started on', async () => {
    const url = await createTestDatabase();
    expectFailure(await runCli(url, ['keys:rotate']), /^error: no active signing key to rotate/);
  });

  it('needs the KEK over encrypted keys: without it or with another one it fails and changes nothing', async () => {
    const url = await serviceDatabase({ KEYS_ENCRYPTION_KEY: KEK });
    const before = await storedKeys(url);
    expectFailure(await runCli(url, ['keys:rotate']), /KEYS_ENCRYPTION_KEY is not set/);
    expectFailure(await runCli(url, ['keys:rotate'], { KEYS_ENCRYPTION_KEY: OTHER_KEK }), /KEYS_ENCRYPTION_KEY does not decrypt/);
    expect(await storedKeys(url)).toEqual(before);

    const rotated = parseSuccess<{ kid: string }[]>(await runCli(url, ['keys:rotate'], { KEYS_ENCRYPTION_KEY: KEK }));
    expect(rotated).toHaveLength(2);
    for (const { kid } of rotated) {
      const created = (await storedKeys(url)).find((row) => row.kid === kid)!;
      expect(created).toMatchObject({ private_key_pem: null, private_key_encrypted: expect.any(Buffer) });
    }
  });
});

describe('keys:list and keys:revoke', () => {
  let url: string;
  beforeAll(async () => {
    url = await serviceDatabase({ KEYS_ENCRYPTION_KEY: KEK });
  });

  it('keys:list prints public facts only', async () => {
    const rows = await storedKeys(url);
    const run = await runCli(url, ['keys:list']);
    const listed = parseSuccess<Record<string, unknown>[]>(run);
    expect(listed).toEqual(
      rows.map((row) => ({
        kid: row.kid,
        alg: row.alg,
        status: 'active',
        created_at: expect.any(String),
        activates_at: expect.any(String),
        retired_at: null,
        expires_at: null,
        revoked_at: null,
      })),
    );
    expect(listed.map((key) => key.alg)).toEqual(['ES256', 'RS256']);
    const output = run.stdout + run.stderr;
    expect(output).not.toMatch(/PRIVATE KEY|"d"|private/i);
    for (const row of rows) {
      expect(output).not.toContain(row.private_key_encrypted!.toString('base64'));
      expect(output).not.toContain(row.private_key_encrypted!.toString('hex'));
    }
  });

  it('keys:revoke of an unknown kid fails naming it', async () => {
    expectFailure(await runCli(url, ['keys:revoke', 'no-such-kid']), /^error: no signing key with kid "no-such-kid"\n$/);
  });

  it('keys:revoke of a kid with control characters or of 10,000 characters fails the same way', async () => {
    expectFailure(await runCli(url, ['keys:revoke', 'a\u0001b']), /^error: no signing key with kid "a\\u0001b"\n$/);
    expectFailure(await runCli(url, ['keys:revoke', 'k'.repeat(10_000)]), /^error: no signing key with kid "k{10000}"\n$/);
  });

  it('keys:revoke takes a kid that starts with a dash (one base64url kid in 64 does) as the kid, not as an option', async () => {
    expectFailure(await runCli(url, ['keys:revoke', '-z6JrZ-v4cIOOvz5_WQncq7RQudKZi776fg7lm1aMrc']), /^error: no signing key with kid "-z6JrZ-v4cIOOvz5_WQncq7RQudKZi776fg7lm1aMrc"\n$/);
    expectFailure(await runCli(url, ['keys:revoke', '--x']), /^error: no signing key with kid "--x"\n$/);
  });

  it('keys:revoke of the active key replaces it, and a second revocation succeeds without changing anything', async () => {
    const [active, rs256] = await storedKeys(url);
    const run = await runCli(url, ['keys:revoke', active.kid], { KEYS_ENCRYPTION_KEY: KEK });
    const revoked = parseSuccess<{ kid: string; status: string; already_revoked: boolean; replaced_by: { kid: string; alg: string } | null }>(run);
    expect(revoked).toMatchObject({ kid: active.kid, status: 'revoked', already_revoked: false, replaced_by: { alg: 'ES256' } });
    // The security event log records it on stderr (JSON here, stderr being no terminal).
    const events = run.stderr.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line));
    expect(events).toEqual([expect.objectContaining({ level: 'warn', event: 'key.revoked', reason: 'cli', kid: active.kid, alreadyRevoked: false, replacedBy: revoked.replaced_by!.kid })]);
    const after = await storedKeys(url);
    const again = parseSuccess<{ already_revoked: boolean; revoked_at: string }>(await runCli(url, ['keys:revoke', active.kid]));
    expect(again).toMatchObject({ already_revoked: true, replaced_by: null });
    expect(await storedKeys(url)).toEqual(after);
    const listed = parseSuccess<{ kid: string; status: string }[]>(await runCli(url, ['keys:list']));
    expect(listed.map(({ kid, status }) => ({ kid, status }))).toEqual([
      { kid: revoked.replaced_by!.kid, status: 'active' },
      { kid: active.kid, status: 'revoked' },
      { kid: rs256.kid, status: 'active' },
    ]);
  });

  it('keys:revoke of an active encrypted key needs the KEK for its replacement, and changes nothing without it', async () => {
    const [active] = (await storedKeys(url)).filter((row) => row.retired_at === null);
    const before = await storedKeys(url);
    expectFailure(await runCli(url, ['keys:revoke', active.kid]), /KEYS_ENCRYPTION_KEY is not set/);
    expect(await storedKeys(url)).toEqual(before);
  });
});

describe('the built service over encrypted keys', () => {
  it('refuses to start without the right KEK, with one plain line naming KEYS_ENCRYPTION_KEY', async () => {
    const url = await serviceDatabase({ KEYS_ENCRYPTION_KEY: KEK });
    const env = { DATABASE_URL: url, PORT: String(await freePort()), HOST: '127.0.0.1', LOG_LEVEL: 'info', LOG_REQUESTS: 'false' };
    for (const [kek, message] of [
      ['', /KEYS_ENCRYPTION_KEY is not set/],
      [OTHER_KEK, /KEYS_ENCRYPTION_KEY does not decrypt the stored private signing keys/],
    ] as const) {
      const service = spawnService({ ...env, KEYS_ENCRYPTION_KEY: kek });
      const deadline = setTimeout(() => service.child.kill('SIGKILL'), 20_000); // a service that started after all
      expect(await service.exited).toBe(1);
      clearTimeout(deadline);
      // One plain line, as for any setting that stops the start; no log line at error level, no stack.
      const lines = service.output().split('\n').filter(Boolean);
      const plain = lines.filter((line) => !line.startsWith('{'));
      expect(plain).toHaveLength(1);
      expect(plain[0]).toMatch(message);
      const failures = lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { level: string }).filter((line) => line.level === 'error' || line.level === 'fatal');
      expect(failures).toEqual([]);
      expect(service.output()).not.toMatch(/unable to authenticate/i);
    }
  });

  it('says once that keys are unencrypted without a KEK (a warning outside development), and nothing with one', async () => {
    const plain = await startTestApp();
    const staging = await startTestApp({ APP_ENV: 'staging' });
    const sealed = await startTestApp({ KEYS_ENCRYPTION_KEY: KEK });
    await Promise.all([plain.close(), staging.close(), sealed.close()]);
    const mentions = (logs: Record<string, unknown>[]) => logs.filter((line) => /KEYS_ENCRYPTION_KEY/.test(String(line.msg)));
    const fact = 'KEYS_ENCRYPTION_KEY is not set: private signing keys are stored unencrypted';
    expect(mentions(plain.logs)).toEqual([expect.objectContaining({ level: 'info', msg: `${fact} (fine for development; APP_ENV=production requires it)` })]);
    expect(mentions(staging.logs)).toEqual([expect.objectContaining({ level: 'warn', msg: fact })]);
    expect(mentions(sealed.logs)).toEqual([]);
  });
});
