import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.js';

const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));
const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

export interface ServiceProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Runs the built service (`node dist/main.js`) with `env` added to the current environment. */
export function spawnService(env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, [MAIN], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return { child, output: () => output, exited };
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * A test's time limit in a file of CLI tests: each command is a process of its own (under a second
 * on an idle machine, several on a loaded one), so a test's time grows with its commands, each
 * bounded by runCli's own 25 s. The verdict must not depend on the machine's speed.
 */
export const CLI_TEST_TIMEOUT_MS = 180_000;

/**
 * Runs the built CLI (`node dist/cli.js ...args`) to completion with only PATH and `env` in its
 * environment. stdin is always written (or left empty) and closed, so a command that reads it
 * never waits on a terminal.
 */
export function runCli(args: string[], options: { env: Record<string, string>; stdin?: string; cwd?: string }): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: options.cwd,
      env: { PATH: process.env.PATH ?? '', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.on('error', () => {}); // EPIPE when the CLI exits before reading its input
    child.stdin.end(options.stdin ?? '');
  });
}

/** Polls `url` until it answers `status` (or throws after `timeoutMs`). */
export async function waitForStatus(url: string, status: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answered = await fetch(url).then(
      (response) => response.status,
      () => null,
    );
    if (answered === status) return;
    if (Date.now() > deadline) throw new Error(`${url} did not answer ${status} (last: ${answered})`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

/**
 * The built service on `databaseUrl` as its own process (to be killed and started again), on a
 * free port that is also its public address; resolves once it is healthy. The caller kills it.
 */
export async function startServiceOn(databaseUrl: string): Promise<{ service: ServiceProcess; baseUrl: string }> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const service = spawnService({ DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', API_URL: baseUrl, FRONTEND_URL: baseUrl, IDENTITY_URL: baseUrl, LOG_LEVEL: 'warn' });
  await waitForStatus(`${baseUrl}/health`, 200, 15_000).catch((error: Error) => {
    service.child.kill('SIGKILL');
    throw error;
  });
  return { service, baseUrl };
}
