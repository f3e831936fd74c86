import './runtime-check.js';
import 'reflect-metadata';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp } from './app.js';
import { createRootLogger } from './common/logging/logger.js';
import { type Env, InvalidConfigError, loadProcessEnv, SHUTDOWN_GRACE_MS } from './config/env.js';
import { DataFolderInUse } from './database/data-folder-lock.js';
import { type DatabaseServer, openDatabaseServer } from './database/database-server.js';
import { EmbeddedPostgresNotInstalled } from './database/embedded-postgres.js';
import { SchemaStatus } from './database/schema-status.js';
import { HealthRegistry } from './health/health-registry.js';

let env: Env;
try {
  env = loadProcessEnv();
} catch (error) {
  if (!(error instanceof InvalidConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
}

// A person at a terminal reads lines; a log collector (no terminal) gets JSON.
const logger = createRootLogger({ level: env.LOG_LEVEL, pretty: process.stdout.isTTY === true });
let database: DatabaseServer | undefined;
let app: NestFastifyApplication | undefined;

async function start() {
  database = await openDatabaseServer(env, 'service', (line) => logger.info({ context: 'EmbeddedPostgres' }, line));
  app = await createApp(env, database.url, logger);
  await app.listen({ port: env.PORT, host: env.HOST });
  logger.info(readyLine(app.get(SchemaStatus).applied));
  // Serving 503 without a database forever helps nobody: exit non-zero, and the supervisor
  // (systemd's Restart=, a container's restart policy) starts the service, and the server, again.
  database.onServerExit((pid) => {
    logger.error(`the embedded PostgreSQL (postmaster pid ${pid}) exited under the service; stopping with exit code 1 to be restarted`);
    shutdown(1, {});
  });
}

/** The one line that says the service is ready: where, its documentation, what the start migrated, and a first step. */
function readyLine(applied: string[]): string {
  const migrations = applied.length ? `applied migrations ${applied.join(', ')}` : 'database schema up to date';
  return `voyage-connect ready on http://${env.HOST}:${env.PORT} (public ${env.apiUrl}); API docs at ${env.apiUrl}/docs; ${migrations}. First client: npm run cli -- client:create --name my-device`;
}

/**
 * Health turns 503 (and stays so for SHUTDOWN_DELAY_MS while requests are still served, for load
 * balancers to notice), in-flight requests finish (or are cut after SHUTDOWN_TIMEOUT_MS), the
 * pool and the embedded database close. Whatever hangs, the process is gone after the deadline.
 */
async function stop(): Promise<void> {
  app?.get(HealthRegistry).beginShutdown();
  if (env.SHUTDOWN_DELAY_MS > 0) await new Promise((resolve) => setTimeout(resolve, env.SHUTDOWN_DELAY_MS));
  setTimeout(() => {
    logger.error('shutdown did not finish in time; exiting');
    process.exit(1);
  }, env.SHUTDOWN_TIMEOUT_MS + SHUTDOWN_GRACE_MS).unref();
  const cutoff = setTimeout(() => app?.getHttpServer().closeAllConnections(), env.SHUTDOWN_TIMEOUT_MS).unref();
  try {
    await app?.close();
    await database?.close();
  } finally {
    clearTimeout(cutoff);
  }
}

const starting = start();
let stopping: Promise<void> | undefined;

/** Stops once, however many signals (or a dead database) ask, then exits with `exitCode`. */
function shutdown(exitCode: number, why: { signal?: NodeJS.Signals }) {
  stopping ??= (async () => {
    logger.info(why, 'shutting down: draining requests');
    await starting.catch(() => {}); // a signal during start-up waits for it, then undoes it
    await stop();
    logger.info('stopped');
  })().then(
    () => process.exit(exitCode),
    (error) => {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    },
  );
}
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => shutdown(0, { signal }));

try {
  await starting;
} catch (error) {
  // A setting only createApp can check (METRICS_ALLOWED_CIDRS), a data folder another service
  // holds, or no database at all, is reported like a bad setting: one line.
  const refusal = error instanceof InvalidConfigError || error instanceof DataFolderInUse || error instanceof EmbeddedPostgresNotInstalled;
  if (refusal) process.stderr.write(`${error.message}\n`);
  else logger.fatal({ err: error }, 'start-up failed');
  await stop().catch(() => {});
  process.exit(1);
}
