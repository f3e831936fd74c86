import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type EmbeddedPostgres, ensureDatabase, startEmbeddedPostgres } from '../../src/database/embedded-postgres.js';
import { freePort } from '../setup/free-port.js';

const run = promisify(execFile);

/** Stop modes of pg_ctl: `fast` is a clean shutdown, `immediate` is a crash (recovery at the next start). */
export type StopMode = 'fast' | 'immediate';

/** A PostgreSQL cluster the suite owns: it may stop, crash and restart it at will. */
export interface OwnedCluster {
  /** URL of the database the service instances use. */
  databaseUrl: string;
  /** Superuser URL of the `postgres` database. */
  adminUrl: string;
  port: number;
  stop(mode: StopMode): Promise<void>;
  start(): Promise<void>;
  /**
   * stop(mode) then start() (what `pg_ctl restart -m mode` does, with the start options spelled
   * out); for `immediate`, a crash and its recovery from the WAL.
   */
  restart(mode: StopMode): Promise<void>;
  /** Stops the server (whatever state it is in) and removes its files. */
  destroy(): Promise<void>;
}

const DATABASE = 'voyage_faults';
/** pg_ctl waits at most this long for a start or a stop. */
const PG_CTL_WAIT_S = 60;

export async function createCluster(): Promise<OwnedCluster> {
  const dataDir = await mkdtemp(join(tmpdir(), 'voyage-connect-faults-'));
  const port = await freePort();
  let server: EmbeddedPostgres;
  try {
    server = await startEmbeddedPostgres({ dataDir, port });
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  await ensureDatabase(server.url(), DATABASE);

  const clusterDir = join(dataDir, 'postgres');
  const { pg_ctl: pgCtl } = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { pg_ctl: string };
  // PostgreSQL (and pg_ctl) refuse to run as root; startEmbeddedPostgres runs it as `postgres`.
  const account = userInfo().uid === 0 ? await postgresAccount() : {};
  const pgCtlRun = (args: string[]) => run(pgCtl, [...args, '-D', clusterDir], { ...account, timeout: (PG_CTL_WAIT_S + 10) * 1000 });
  // The same options startEmbeddedPostgres uses. `-l` matters: without it the server would keep
  // pg_ctl's stdout open and execFile would never return.
  const serverOptions = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''`;

  const stop = async (mode: StopMode) => {
    await pgCtlRun(['stop', '-m', mode, '-w', '-t', String(PG_CTL_WAIT_S)]);
  };
  const start = async () => {
    await pgCtlRun(['start', '-w', '-t', String(PG_CTL_WAIT_S), '-l', join(clusterDir, 'server.log'), '-o', serverOptions]);
  };
  return {
    databaseUrl: server.url(DATABASE),
    adminUrl: server.url(),
    port,
    stop,
    start,
    async restart(mode) {
      await stop(mode);
      await start();
    },
    async destroy() {
      await pgCtlRun(['stop', '-m', 'immediate', '-w', '-t', String(PG_CTL_WAIT_S)]).catch(() => {}); // may be stopped already
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function postgresAccount(): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}
