import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../setup/database.js';
import { freePort } from '../setup/free-port.js';
import { waitForStatus } from '../setup/processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** `npm run <script>` as a supervisor starts it: the signal goes to npm's own process. */
function npmRun(script: string, env: Record<string, string>, args: string[] = []): { child: ChildProcess; exited: Promise<unknown>; output: () => string } {
  const child = spawn('npm', ['run', script, ...(args.length ? ['--', ...args] : [])], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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

describe('npm scripts under a supervisor', () => {
  const started: ChildProcess[] = [];
  afterAll(() => {
    for (const child of started) child.kill('SIGKILL');
  });

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

    example.child.kill('SIGTERM');
    await example.exited;
    await expect.poll(() => running(commandLine), { timeout: 10_000, interval: 250 }).toBe(false);
  }, 60_000);
});
