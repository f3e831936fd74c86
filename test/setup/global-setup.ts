import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres.js';
import { freePort } from './free-port.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A superuser URL; each test file creates its own database on this server. */
    adminDatabaseUrl: string;
    /** Prefix of this run's databases, so teardown drops exactly those. */
    databasePrefix: string;
  }
}

/**
 * One PostgreSQL server for the run: the one in DATABASE_URL, or a fresh embedded server in a
 * temporary folder (removed afterwards).
 */
export default async function setup(project: TestProject) {
  const prefix = `vc_test_${randomBytes(3).toString('hex')}_`;
  project.provide('databasePrefix', prefix);
  if (process.env.DATABASE_URL) {
    const adminUrl = process.env.DATABASE_URL;
    project.provide('adminDatabaseUrl', adminUrl);
    return () => dropDatabases(adminUrl, prefix);
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'voyage-connect-test-'));
  const server = await startEmbeddedPostgres({ dataDir, port: await freePort() });
  project.provide('adminDatabaseUrl', server.url());
  return async () => {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
}

/** Removes the databases this run created on a shared server. */
async function dropDatabases(adminUrl: string, prefix: string) {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [prefix]);
    for (const { datname } of rows) await admin.query(`DROP DATABASE ${admin.escapeIdentifier(datname)} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
