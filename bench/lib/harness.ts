/**
 * What every benchmark shares: the anchors' folder, CPU pinning (server on CPU 0, load on CPU 1),
 * our service built and started on its embedded PostgreSQL, the anchors' servers, and the
 * quiet-machine check from ../shared/anchors/sysmon.mjs.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Snapshot } from '../sysmon-types.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const ANCHORS = fileURLToPath(new URL('../../../shared/anchors/', import.meta.url));
export const SERVER_CPU = '0';
export const LOAD_CPU = '1';
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString()) || 100;

const run = promisify(execFile);

/** `taskset -c <cpu> node <args>`, as [command, argv]. */
export const pinned = (cpu: string, args: string[]) => ['taskset', ['-c', cpu, process.execPath, ...args]] as const;

export type RunningService = Awaited<ReturnType<typeof startService>>;

/**
 * Our service, built, pinned to CPU 0 with its embedded PostgreSQL (which inherits the pinning),
 * with the shipped logging defaults; its log lines (stdout) go to /dev/null, as a pipe drained by
 * a log shipper would take them.
 * BENCH_CPU_PROF=<dir> makes it write a V8 CPU profile there when it stops (`node --cpu-prof`).
 */
export async function startService(extraEnv: Record<string, string> = {}, nodeArgs: string[] = []) {
  if (process.env.BENCH_CPU_PROF) nodeArgs = ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`, ...nodeArgs];
  const dataDir = mkdtempSync(join(tmpdir(), 'voyage-connect-bench-'));
  const port = await freePort();
  const env = {
    ...process.env,
    DATABASE_URL: '',
    DATA_DIR: dataDir,
    EMBEDDED_PG_PORT: String(await freePort()),
    PORT: String(port),
    HOST: '127.0.0.1',
    // The shipped defaults, as operators run it: info level, one log line per request.
    LOG_LEVEL: 'info',
    LOG_REQUESTS: 'true',
    ...extraEnv,
  };
  const [bin, args] = pinned(SERVER_CPU, [...nodeArgs, join(ROOT, 'dist/main.js')]);
  const child = spawn(bin, args, { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(`${base}/health`, 200);
  const { databaseUrl, postmaster } = extraEnv.DATABASE_URL ? { databaseUrl: extraEnv.DATABASE_URL, postmaster: undefined } : embeddedDatabase(env.DATA_DIR, env.EMBEDDED_PG_PORT);
  return {
    base,
    pid: child.pid!,
    /** The service's database, for fixtures a benchmark needs in bulk. */
    databaseUrl,
    /** The embedded PostgreSQL's postmaster; undefined with a DATABASE_URL (that server is someone else's). */
    postmaster,
    /** Runs the admin CLI beside the service and returns its JSON output. */
    cli: async (...cliArgs: string[]) => JSON.parse((await run(process.execPath, [join(ROOT, 'dist/cli.js'), ...cliArgs], { env })).stdout),
    /** CPU (% of one core) the service's PostgreSQL (postmaster and its backends) used between two snapshots. */
    databaseCpuPct: (a: Snapshot, b: Snapshot) => {
      if (postmaster === undefined) return 0;
      const ticks = (snap: Snapshot) =>
        [...snap.procs.values()].filter((proc) => proc.pid === postmaster || proc.ppid === postmaster).reduce((sum, proc) => sum + proc.ticks, 0);
      return Math.round(((ticks(b) - ticks(a)) / CLK_TCK / ((b.t - a.t) / 1000)) * 1000) / 10;
    },
    stop: async () => {
      await stopChild(child);
      // A DATA_DIR passed in extraEnv is the caller's to remove.
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The URL and postmaster of the PostgreSQL the service started under `dataDir`. With DATABASE_URL
 * the service starts none (src/database/database-server.ts), so a second instance given the first
 * one's URL shares its server; its own DATA_DIR then stays empty.
 */
function embeddedDatabase(dataDir: string, port: string) {
  const credentials = JSON.parse(readFileSync(join(dataDir, 'embedded-postgres.json'), 'utf8')) as { user: string; password: string };
  const postmaster = Number(readFileSync(join(dataDir, 'postgres/postmaster.pid'), 'utf8').split('\n')[0]);
  return { databaseUrl: `postgres://${credentials.user}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}/voyage_connect`, postmaster };
}

/** An anchor server from ../shared/anchors on CPU 0, ready when it prints `"ready":true`. */
export async function anchorServer(args: string[], nodeArgs: string[] = []) {
  const port = await freePort();
  const [bin, argv] = pinned(SERVER_CPU, [...nodeArgs, ...args, '--port', String(port)]);
  const child = spawn(bin, argv, { cwd: ANCHORS, stdio: ['ignore', 'pipe', 'ignore'] });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk) => {
      output += chunk;
      if (output.includes('"ready":true')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`${args[0]} exited ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop: () => stopChild(child) };
}

/** A load generator (a script path and its arguments) on CPU 1; resolves with its last stdout line as JSON. */
export function loadOnCpu1<T extends object>(args: string[], cwd = ANCHORS): Promise<T | { error: string }> {
  const [bin, argv] = pinned(LOAD_CPU, args);
  return new Promise((resolve) => {
    const child = spawn(bin, argv, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    child.on('exit', (code) => {
      try {
        resolve(JSON.parse(out.trim().split('\n').pop()!));
      } catch {
        resolve({ error: `exit ${code}: ${err.slice(-300)}` });
      }
    });
  });
}

export async function sysmon() {
  ensureAnchorsInstalled();
  return (await import(join(ANCHORS, 'sysmon.mjs'))) as typeof import('../sysmon-types.js');
}

export function ensureAnchorsInstalled() {
  if (!existsSync(join(ANCHORS, 'node_modules'))) execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: ANCHORS, stdio: 'inherit' });
}

export function machine() {
  return { node: process.version, cpus: execFileSync('nproc').toString().trim(), kernel: execFileSync('uname', ['-r']).toString().trim() };
}

export async function stopChild(child: ChildProcess) {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const force = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(force);
}

export async function waitFor(url: string, status: number) {
  for (let attempt = 0; attempt < 600; attempt++) {
    if ((await fetch(url).catch(() => null))?.status === status) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} never answered ${status}`);
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
