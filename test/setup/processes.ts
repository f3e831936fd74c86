import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Logger, type LoggerService } from '@nestjs/common';
import { freePort } from './free-port.js';

const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));
const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const CLI_COMMAND_LINE = new URL('../../dist/cli-command-line.js', import.meta.url).href;

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
 * A test's time limit in a file of CLI tests: a test may run many commands, each bounded by
 * runCli's own 25 s (a command is a second or more on a loaded machine, a process several), so
 * the verdict must not depend on the machine's speed.
 */
export const CLI_TEST_TIMEOUT_MS = 180_000;

/** What a command line may take before runCli gives up on it. */
const CLI_COMMAND_LIMIT_MS = 25_000;

export interface CliOptions {
  env: Record<string, string>;
  stdin?: string;
  cwd?: string;
}

type RunCommandLine = typeof import('../../src/cli-command-line.js').runCommandLine;

/** The built CLI's command line (dist/, as the process runs it), loaded once per test file. */
let commandLine: Promise<RunCommandLine> | undefined;
/** Command lines run one at a time: Nest keeps one static logger per process. */
let previous: Promise<unknown> = Promise.resolve();

/**
 * Runs a command line of the built CLI (dist/) inside the test's process, as `node dist/cli.js
 * ...args` would: its stdout, stderr and exit code, with only PATH and `env` as its environment,
 * `cwd` as its working directory, and stdin written (or left empty) and closed. For what only a
 * process shows (its entry point, signals, the embedded PostgreSQL), use runCliProcess.
 */
export function runCli(args: string[], options: CliOptions): Promise<CliResult> {
  const run = previous.then(() => runCliInProcess(args, options));
  previous = run.catch(() => {});
  return run;
}

async function runCliInProcess(args: string[], options: CliOptions): Promise<CliResult> {
  commandLine ??= import(CLI_COMMAND_LINE).then((module: { runCommandLine: RunCommandLine }) => module.runCommandLine);
  const runCommandLine = await commandLine;
  let stdout = '';
  let stderr = '';
  const io = {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin: Readable.from(options.stdin ? [Buffer.from(options.stdin)] : []),
    env: { PATH: process.env.PATH ?? '', ...options.env },
    cwd: options.cwd,
  };
  // The command's application replaces Nest's static logger; the test's own apps keep theirs.
  const nestLogger = (Logger as unknown as { staticInstanceRef?: LoggerService }).staticInstanceRef;
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`voyage-connect ${args.join(' ')} did not finish within ${CLI_COMMAND_LIMIT_MS} ms\nstderr: ${stderr}`)), CLI_COMMAND_LIMIT_MS);
  });
  try {
    const code = await Promise.race([runCommandLine(args, io), limit]);
    return { code, signal: null, stdout, stderr };
  } finally {
    clearTimeout(timer);
    if (nestLogger) Logger.overrideLogger(nestLogger);
  }
}

/**
 * Runs the built CLI as a process (`node dist/cli.js ...args`) to completion with only PATH and
 * `env` in its environment. stdin is always written (or left empty) and closed, so a command that
 * reads it never waits on a terminal. For tests of the process itself: its entry point, its exit
 * on signals, the embedded PostgreSQL it starts and stops, the Node version check.
 */
export function runCliProcess(args: string[], options: CliOptions): Promise<CliResult> {
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
    const timer = setTimeout(() => child.kill('SIGKILL'), CLI_COMMAND_LIMIT_MS);
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
  // Starting node and Nest from dist/ takes seconds, and on a busy machine (four test files at a time on two cores) more than 15.
  await waitForStatus(`${baseUrl}/health`, 200, 60_000).catch((error: Error) => {
    service.child.kill('SIGKILL');
    throw error;
  });
  return { service, baseUrl };
}
