import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFailure, parseSuccess } from '../../setup/cli-results.js';
import { createTestDatabase } from '../../setup/database.js';
import { runCli as runBuiltCli } from '../../setup/processes.js';

/** Every command that acts on one user takes `--username U`, and still the forms older scripts use. */
let databaseUrl: string;
let cwd: string;
const runCli = (args: string[], stdin?: string) => runBuiltCli(args, { cwd, stdin, env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' } });
const PASSWORD = 'correct horse battery';

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-cli-'));
});
afterAll(async () => {
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

type UserView = { username: string; enabled: boolean };

describe('--username, the one documented form', () => {
  it('works for every command that takes a user', async () => {
    expect(parseSuccess<UserView>(await runCli(['user:create', '--username', 'alice'], `${PASSWORD}\n`)).username).toBe('alice');
    expect(parseSuccess<UserView>(await runCli(['user:disable', '--username', 'alice']))).toMatchObject({ username: 'alice', enabled: false });
    expect(parseSuccess<UserView>(await runCli(['user:enable', '--username', 'ALICE']))).toMatchObject({ username: 'alice', enabled: true });
    expect(parseSuccess(await runCli(['user:set-password', '--username', 'alice'], 'another good password\n'))).toMatchObject({ username: 'alice', revoked_grants: 0 });
    expect(parseSuccess(await runCli(['user:unlock', '--username', 'alice']))).toMatchObject({ username: 'alice', cleared_slow_downs: 0 });
    expect(parseSuccess(await runCli(['grants:revoke', '--username', 'alice']))).toMatchObject({ username: 'alice', revoked_grants: 0 });
    expect(parseSuccess(await runCli(['grants:list', '--username', 'alice']))).toEqual([]);
  }, 180_000);

  it('takes a username starting with "-" as the value of --username', async () => {
    expect(parseSuccess<UserView>(await runCli(['user:create', '--username', '-dash'], `${PASSWORD}\n`)).username).toBe('-dash');
    expect(parseSuccess<UserView>(await runCli(['user:disable', '--username', '-dash'])).enabled).toBe(false);
  }, 180_000);

  it('is named in every such command\'s help, the older forms marked deprecated', async () => {
    for (const command of ['user:create', 'user:disable', 'user:enable', 'user:set-password', 'user:unlock', 'grants:revoke', 'grants:list']) {
      const help = await runCli([command, '--help']);
      expect(help.code, command).toBe(0);
      expect(help.stdout, command).toMatch(/^ {2}--username <username> {2}/m);
      expect(help.stdout, command).toMatch(/^ {2}--user <username> +deprecated: use --username$/m);
    }
  }, 180_000);
});

describe('the forms older scripts use', () => {
  it('a positional USERNAME (user:set-password, user:disable, user:enable)', async () => {
    parseSuccess(await runCli(['user:create', '--username', 'bob'], `${PASSWORD}\n`));
    expect(parseSuccess<UserView>(await runCli(['user:disable', 'bob'])).enabled).toBe(false);
    expect(parseSuccess<UserView>(await runCli(['user:enable', 'bob'])).enabled).toBe(true);
    expect(parseSuccess(await runCli(['user:set-password', 'bob'], 'another good password\n'))).toMatchObject({ username: 'bob' });
    expect(parseSuccess<UserView>(await runCli(['user:disable', '--', '-dash'])).username).toBe('-dash');
  }, 180_000);

  it('--user U (grants:revoke, and every other user command alike)', async () => {
    expect(parseSuccess(await runCli(['grants:revoke', '--user', 'bob']))).toMatchObject({ username: 'bob', revoked_grants: 0 });
    expect(parseSuccess(await runCli(['grants:list', '--user', 'bob']))).toEqual([]);
    expect(parseSuccess<UserView>(await runCli(['user:disable', '--user', 'bob'])).enabled).toBe(false);
    expect(parseSuccess(await runCli(['user:unlock', '--user', 'bob']))).toMatchObject({ username: 'bob' });
  }, 180_000);
});

describe('a username given wrongly', () => {
  it('is refused when missing, or given twice differently, changing nothing', async () => {
    parseSuccess(await runCli(['user:create', '--username', 'carol'], `${PASSWORD}\n`));
    for (const command of ['user:disable', 'user:enable', 'user:unlock', 'grants:revoke', 'grants:list']) {
      expectFailure(await runCli([command]), /required option '--username <username>' not specified/);
    }
    expectFailure(await runCli(['user:disable', '--username', 'carol', 'dave']), /given twice, differently/);
    expectFailure(await runCli(['user:disable', '--username', 'carol', '--user', 'dave']), /given twice, differently/);
    expect(parseSuccess<UserView[]>(await runCli(['user:list'])).find((user) => user.username === 'carol')?.enabled).toBe(true);
    // The same name twice is no contradiction.
    expect(parseSuccess<UserView>(await runCli(['user:disable', '--username', 'carol', 'carol'])).enabled).toBe(false);
  }, 180_000);
});
