import type { Env } from '../config/env.js';
import { ensureDatabase, startEmbeddedPostgres } from './embedded-postgres.js';

export interface DatabaseServer {
  url: string;
  /** Releases the server: stops the embedded one when this process owns it. */
  close(): Promise<void>;
}

const EMBEDDED_DATABASE = 'voyage_connect';

/**
 * `DATABASE_URL` when set; otherwise the embedded PostgreSQL under DATA_DIR. The service stops the
 * embedded server at shutdown (`owner: 'service'`), even one it adopted from a killed run; the
 * CLI stops it only when it started it, so it can run beside a live service.
 */
export async function openDatabaseServer(env: Env, owner: 'service' | 'cli', log: (line: string) => void): Promise<DatabaseServer> {
  if (env.DATABASE_URL) return { url: env.DATABASE_URL, close: async () => {} };
  const embedded = await startEmbeddedPostgres({ dataDir: env.dataDir, port: env.EMBEDDED_PG_PORT, log });
  await ensureDatabase(embedded.url(), EMBEDDED_DATABASE);
  const stopOnClose = owner === 'service' || embedded.startedHere;
  return {
    url: embedded.url(EMBEDDED_DATABASE),
    close: async () => {
      if (stopOnClose) await embedded.stop();
    },
  };
}
