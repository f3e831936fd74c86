import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../setup/database.js';
import { freePort } from '../../setup/free-port.js';
import { waitForStatus } from '../../setup/processes.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** `npm run <script>` as a supervisor starts it: the signal goes to npm's own process. */
function npmRun(script: string, env: Record<string, string>, args: string[] = [], cwd = ROOT): { child: ChildProcess; exited: Promise<unknown>; output: () => string } {
  const child = spawn('npm', ['run', script, ...(args.length ? ['--', ...args] : [])], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  return { child, exited: once(child, 'exit'), output: () => output };
}

/** Whether a process whose command line contains `commandLine` runs. */
const running = (commandLine: string) =>
  new Promise<boolean>((resolve) => spawn('pgrep', ['-f', commandLine]).on('exit', (code) => resolve(code === 0)));

/** Whether anything still answers HTTP at `url`. */
const answers = (url: string) =>
  fetch(url, { signal: AbortSignal.timeout(1_000) }).then(
    () => true,
    () => false,
  );

/** A checkout of the project without dist/, in a folder of its own (its node_modules linked). */
function checkout(): string {
  const folder = mkdtempSync(join(tmpdir(), 'voyage-connect-checkout-'));
  // packages/: the build compiles the device SDK too (a checkout has no dist/ there either).
  for (const entry of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'tsconfig.migrations.json', 'nest-cli.json', 'scripts', 'src', 'migrations', 'packages']) {
    cpSync(join(ROOT, entry), join(folder, entry), { recursive: true, filter: (source) => basename(source) !== 'dist' });
  }
  symlinkSync(join(ROOT, 'node_modules'), join(folder, 'node_modules'));
  return folder;
}

describe('npm scripts under a supervisor', () => {
  const started: ChildProcess[] = [];
  const folders: string[] = [];
  afterAll(() => {
    for (const child of started) child.kill('SIGKILL');
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  });

  it("npm start builds only when the sources are newer than dist/, and never deletes the dist/ a running service uses", async () => {
    const folder = checkout();
    folders.push(folder);
    const port = await freePort();
    const env = { DATABASE_URL: await createTestDatabase(), PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
    const first = npmRun('start', env, [], folder);
    started.push(first.child);
    const health = `http://127.0.0.1:${port}/health`;
    await waitForStatus(health, 200, 150_000);
    expect(first.output()).toContain('building dist/');
    const main = join(folder, 'dist', 'main.js');
    const builtAt = statSync(main).mtimeMs;

    // Nothing changed: a second start does not build; it is refused at once (the port is taken).
    const second = npmRun('start', env, [], folder);
    await second.exited;
    expect(second.output()).not.toContain('building dist/');
    expect(second.output()).toContain(`PORT ${port} on HOST 127.0.0.1 is in use`);
    expect(statSync(main).mtimeMs).toBe(builtAt);

    // A source changed and a migration deleted: the next start builds in place (dist/ is there
    // throughout), and the deleted migration's output is gone, never to be applied.
    const migrations = readdirSync(join(folder, 'migrations')).sort();
    const last = migrations[migrations.length - 1];
    rmSync(join(folder, 'migrations', last));
    const later = new Date(Date.now() + 2_000);
    utimesSync(join(folder, 'src', 'app.ts'), later, later);
    const third = npmRun('start', env, [], folder);
    let distMissing = false;
    const watch = setInterval(() => (distMissing ||= !existsSync(main)), 20);
    await third.exited;
    clearInterval(watch);
    expect(third.output()).toContain('building dist/');
    expect(distMissing).toBe(false);
    expect(statSync(main).mtimeMs).toBeGreaterThan(builtAt);
    expect(existsSync(join(folder, 'dist', 'migrations', last.replace(/\.ts$/, '.js')))).toBe(false);
    expect(existsSync(join(folder, 'dist', 'migrations', migrations[0].replace(/\.ts$/, '.js')))).toBe(true);
    // The first service never noticed.
    expect((await fetch(health)).status).toBe(200);
    first.child.kill('SIGTERM');
    await first.exited;
  }, 300_000);

  it('npm run start:prod stops the service when npm gets SIGTERM, leaving nothing behind', async () => {
    const port = await freePort();
    const service = npmRun('start:prod', { DATABASE_URL: await createTestDatabase(), PORT: String(port), HOST: '127.0.0.1' });
    started.push(service.child);
    const health = `http://127.0.0.1:${port}/health`;
    await waitForStatus(health, 200, 60_000);

    service.child.kill('SIGTERM');
    await service.exited;
    // The node process that served the port is gone too, not orphaned and still answering.
    await expect.poll(() => answers(health), { timeout: 15_000, interval: 250 }).toBe(false);
    expect(service.output()).toMatch(/"msg":"stopped"/);
  }, 90_000);

  it('npm run example:subscriber stops the example when npm gets SIGTERM', async () => {
    // Nothing listens there: the example keeps retrying until it is stopped.
    const api = `http://127.0.0.1:${await freePort()}`;
    const example = npmRun('example:subscriber', { CLIENT_ID: 'example', CLIENT_SECRET: 'secret' }, ['--api', api]);
    started.push(example.child);
    const commandLine = `notification-subscriber.ts --api ${api}`;
    await expect.poll(() => running(commandLine), { timeout: 30_000, interval: 250 }).toBe(true);
    // Its first line: it has started, and handles SIGTERM (a supervisor's stop comes after start-up).
    await expect.poll(() => example.output(), { timeout: 30_000, interval: 100 }).toContain(`subscribing at ${api}`);

    // The script runs node with tsx's loader (`exec node --import tsx`): one process, no tsx parent
    // relaying signals. It gets npm's SIGTERM, closes its subscriber and exits 0 (within 2 s, even
    // in the middle of a token request that is still retrying).
    example.child.kill('SIGTERM');
    const [code, signal] = (await example.exited) as [number | null, NodeJS.Signals | null];
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    await expect.poll(() => running(commandLine), { timeout: 10_000, interval: 250 }).toBe(false);
  }, 60_000);
});
