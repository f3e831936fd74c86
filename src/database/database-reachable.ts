import pg from 'pg';
import { StartupRefusal } from '../common/errors/startup-refusal.js';
import { withoutPassword } from '../config/without-password.js';
import { isDatabaseUnavailable } from '../common/errors/database-unavailable.js';

/** DATABASE_URL does not lead to a database this process can use: one line naming it (without its password) and the fix. */
export class DatabaseUnreachable extends StartupRefusal {}

/** How long a start-up waits for a PostgreSQL that is still starting (a container started beside it) before it says so. */
const PATIENCE_MS = 5_000;
const RETRY_MS = 500;

/**
 * Connects to `url` once, before anything is built on it: a database that is away is retried for
 * PATIENCE_MS, then reported in one line (rather than ten retries with stacks over half a
 * minute); a wrong password, user or database name at once.
 */
export async function checkDatabaseReachable(url: string): Promise<void> {
  const deadline = Date.now() + PATIENCE_MS;
  for (;;) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: PATIENCE_MS });
    client.on('error', () => {}); // the connect() below reports it
    try {
      await client.connect();
      await client.end();
      return;
    } catch (error) {
      await client.end().catch(() => {});
      if (!isDatabaseUnavailable(error) || Date.now() + RETRY_MS > deadline) throw unreachable(url, error as NodeJS.ErrnoException);
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }
}

function unreachable(url: string, error: NodeJS.ErrnoException): DatabaseUnreachable {
  const shown = `DATABASE_URL ${withoutPassword(url)}`;
  const detail = `${error.code ? `${error.code}: ` : ''}${error.message.split('\n')[0]}`;
  switch (error.code) {
    case '28P01':
    case '28000':
      return new DatabaseUnreachable(`${shown} refused its user name or password (${detail}): fix them in DATABASE_URL`);
    case '3D000':
      return new DatabaseUnreachable(`${shown} names a database that does not exist (${detail}): create it (createdb), or fix DATABASE_URL`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new DatabaseUnreachable(`${shown} names a host that cannot be found (${detail}): fix DATABASE_URL`);
    default:
      return new DatabaseUnreachable(`${shown} cannot be reached after ${PATIENCE_MS / 1000} s (${detail}): start PostgreSQL there, or fix DATABASE_URL`);
  }
}
