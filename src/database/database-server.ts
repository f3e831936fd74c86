import type { Env } from '../config/env.js';
import { prepareDataFolder } from './data-folder.js';
import { lockDataFolder } from './data-folder-lock.js';
import { checkDatabaseReachable } from './database-reachable.js';
import { ensureDatabase, startEmbeddedPostgres } from './embedded-postgres.js';

export interface DatabaseServer {
  url: string;
  /** Calls `listener` once if the embedded server dies under this process (never for DATABASE_URL). */
  onServerExit(listener: (pid: number) => void): void;
  /** Releases the server: stops the embedded one when this process owns it. */
  close(): Promise<void>;
}

const EMBEDDED_DATABASE = 'voyage_connect';

/**
 * `DATABASE_URL` when set; otherwise the embedded PostgreSQL under DATA_DIR. One service at a
 * time owns a data folder (a second one refuses to start, so it can never take the first one's
 * database over); it stops the embedded server at shutdown, even one it adopted from a killed
 * run. The CLI stops it only when it started it, so it can run beside a live service.
 */
export async function openDatabaseServer(env: Env, owner: 'service' | 'cli', log: (line: string) => void): Promise<DatabaseServer> {
  if (env.DATABASE_URL) {
    await checkDatabaseReachable(env.DATABASE_URL);
    return { url: env.DATABASE_URL, onServerExit: () => {}, close: async () => {} };
  }
  await prepareDataFolder(env.dataDir);
  const unlock = owner === 'service' ? await lockDataFolder(env.dataDir) : async () => {};
  try {
    const embedded = await startEmbeddedPostgres({ dataDir: env.dataDir, port: env.EMBEDDED_PG_PORT, log });
    await ensureDatabase(embedded.url(), EMBEDDED_DATABASE);
    // A CLI command beside a running service is the usual case, not news; a service adopting a
    // server a killed run left behind is.
    if (!embedded.startedHere && owner === 'service') log(`embedded PostgreSQL already running in ${env.dataDir}; reusing it`);
    const stopOnClose = owner === 'service' || embedded.startedHere;
    return {
      url: embedded.url(EMBEDDED_DATABASE),
      onServerExit: (listener) => embedded.onExit(listener),
      close: async () => {
        if (stopOnClose) await embedded.stop();
        await unlock();
      },
    };
  } catch (error) {
    await unlock();
    throw error;
  }
}
