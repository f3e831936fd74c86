import { readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { DataSource, type DataSourceOptions, type MigrationInterface } from 'typeorm';

/** Any constant: the key of the advisory lock that serialises migrations across instances. */
const MIGRATION_LOCK_KEY = 7_042_001;

/** How long the service's database work may wait; every wait on PostgreSQL is bounded by one of these. */
export interface DatabaseLimits {
  /** Waiting for a pooled connection, or for a new one to open. */
  connectTimeoutMs: number;
  /** One statement's run time (PostgreSQL cancels it). */
  statementTimeoutMs: number;
  /** One statement's wait for a lock (row, table or advisory). */
  lockTimeoutMs: number;
}

/**
 * The one set of connection options used by the service, the admin CLI and the TypeORM CLI.
 * Entities are added by the feature modules (autoLoadEntities); migrations come from migrations/.
 * Without `limits` nothing is bounded but opening a connection: migrations may legitimately run
 * long, and wait for another instance's migrations.
 */
export async function dataSourceOptions(url: string, poolSize = 10, limits?: DatabaseLimits): Promise<DataSourceOptions> {
  return {
    type: 'postgres',
    url,
    synchronize: false,
    migrationsRun: false,
    migrations: await loadMigrations(),
    extra: {
      max: poolSize,
      connectionTimeoutMillis: limits?.connectTimeoutMs ?? 5_000,
      idleTimeoutMillis: 30_000,
      application_name: 'voyage-connect',
      // A server that vanishes without a reset (host gone, cable cut) is noticed by the kernel.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      ...(limits && {
        statement_timeout: limits.statementTimeoutMs,
        lock_timeout: limits.lockTimeoutMs,
        // A transaction left open by a stalled process must not keep its locks for long.
        idle_in_transaction_session_timeout: Math.max(10_000, 2 * limits.statementTimeoutMs),
      }),
    },
  };
}

/** Applies pending migrations, one instance at a time; the names of those it applied. */
export async function runMigrations(dataSource: DataSource): Promise<string[]> {
  const lock = dataSource.createQueryRunner();
  await lock.connect();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    return (await dataSource.runMigrations({ transaction: 'each' })).map((migration) => migration.name);
  } finally {
    await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    await lock.release();
  }
}

type MigrationClass = new () => MigrationInterface;

/**
 * Imports every file of migrations/. Compiled, this file sits in dist/database/ beside
 * dist/migrations/; from source (tests) it sits in src/database/ under the project root.
 */
async function loadMigrations(): Promise<MigrationClass[]> {
  const compiled = import.meta.url.endsWith('.js');
  const directory = new URL(compiled ? '../migrations/' : '../../migrations/', import.meta.url);
  const extension = compiled ? '.js' : '.ts';
  const files = (await readdir(directory)).filter((file) => file.endsWith(extension) && !file.endsWith('.d.ts')).sort();
  const modules = await Promise.all(files.map((file) => import(fileURLToPath(new URL(file, directory)))));
  return modules.flatMap((module) => Object.values(module) as MigrationClass[]);
}
