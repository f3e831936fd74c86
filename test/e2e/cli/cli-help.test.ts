import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../setup/free-port.js';
import { runCli, runCliProcess } from '../../setup/processes.js';

/**
 * Help is answered from the commands' definitions: no database is started, opened or even reached,
 * neither by a command line run in the test's process nor by the CLI's own process.
 */
let cwd: string;
let dataDir: string;
let listener: Server;
let connections = 0;
let watchedUrl: string;

beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-cli-help-'));
  dataDir = join(cwd, 'no-such-data-folder');
  // A port that counts every connection made to it, standing in for a database.
  listener = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  const port = await freePort();
  await new Promise<void>((resolve) => listener.listen(port, '127.0.0.1', resolve));
  watchedUrl = `postgres://user:pw@127.0.0.1:${port}/db`;
});
afterAll(async () => {
  listener?.close();
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

const embedded = () => ({ DATA_DIR: dataDir, EMBEDDED_PG_PORT: '1', LOG_LEVEL: 'warn' });
const external = () => ({ DATABASE_URL: watchedUrl, LOG_LEVEL: 'warn' });

describe.each([
  ['an embedded database whose data folder does not exist', embedded],
  ['a DATABASE_URL nothing must connect to', external],
])('help, with %s', (_what, env) => {
  it('--help lists every command and exits 0', async () => {
    const run = await runCli(['--help'], { cwd, env: env() });
    expect(run, run.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^Usage: voyage-connect \[options\] \[command\]/);
    for (const command of ['client:create', 'user:create', 'grants:list', 'idp:create', 'keys:rotate', 'notification:publish']) expect(run.stdout).toContain(command);
  }, 180_000);

  it('COMMAND --help and help COMMAND print that command\'s options and exit 0', async () => {
    for (const args of [['user:create', '--help'], ['user:create', '-h'], ['help', 'user:create']]) {
      const run = await runCli(args, { cwd, env: env() });
      expect(run, args.join(' ')).toMatchObject({ code: 0 });
      expect(run.stdout).toMatch(/^Usage: voyage-connect user:create \[options\]/);
      expect(run.stdout).toContain('--username <username>');
    }
  }, 180_000);

  it('no command prints the help on stderr and exits 1; an unknown command is named', async () => {
    const none = await runCli([], { cwd, env: env() });
    expect(none).toMatchObject({ code: 1, stdout: '' });
    expect(none.stderr).toMatch(/^Usage: voyage-connect/);
    const unknown = await runCli(['client:frobnicate'], { cwd, env: env() });
    expect(unknown).toMatchObject({ code: 1, stdout: '' });
    expect(unknown.stderr).toMatch(/unknown command 'client:frobnicate'/);
  }, 180_000);

  it('as a process too: help on stdout and exit 0, no command on stderr and exit 1', async () => {
    const help = await runCliProcess(['user:create', '--help'], { cwd, env: env() });
    expect(help, help.stderr).toMatchObject({ code: 0, signal: null, stderr: '' });
    expect(help.stdout).toMatch(/^Usage: voyage-connect user:create \[options\]/);
    const none = await runCliProcess([], { cwd, env: env() });
    expect(none).toMatchObject({ code: 1, signal: null, stdout: '' });
    expect(none.stderr).toMatch(/^Usage: voyage-connect/);
  }, 180_000);

  it('started nothing: no data folder, no connection', async () => {
    await expect(readdir(cwd)).resolves.toEqual([]);
    expect(connections).toBe(0);
  }, 180_000);
});

