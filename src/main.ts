import './runtime-check.js';
import 'reflect-metadata';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp } from './app.js';
import { ClientsRepository } from './clients/clients.repository.js';
import { StartupRefusal } from './common/errors/startup-refusal.js';
import { checkListenAddress, listenRefusal } from './common/http/listen-address.js';
import { readTlsFiles } from './config/tls-files.js';
import { createRootLogger } from './common/logging/logger.js';
import { type Env, InvalidConfigError, loadProcessEnv, SHUTDOWN_GRACE_MS } from './config/env.js';
import { type DatabaseServer, openDatabaseServer } from './database/database-server.js';
import { SchemaStatus } from './database/schema-status.js';
import { HealthRegistryService } from './health/health-registry.service.js';
import { readPortalLogo } from './portal/portal-logo.js';

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
  // What only the service reads, checked before a database is started for it.
  readTlsFiles(env);
  readPortalLogo(env);
  await checkListenAddress(env.HOST, env.PORT);
  database = await openDatabaseServer(env, 'service', (line) => logger.info({ context: 'EmbeddedPostgres' }, line));
  app = await createApp(env, database.url, logger);
  await listen(app);
  const applied = app.get(SchemaStatus).applied;
  if (applied.length) logger.debug({ migrations: applied }, 'applied migrations');
  const noClientYet = await app.get(ClientsRepository).isEmpty().catch(() => false);
  logger.info(readyLine(applied.length, noClientYet));
  // Serving 503 without a database forever helps nobody: exit non-zero, and the supervisor
  // (systemd's Restart=, a container's restart policy) starts the service, and the server, again.
  database.onServerExit((pid) => {
    logger.error(`the embedded PostgreSQL (postmaster pid ${pid}) exited under the service; stopping with exit code 1 to be restarted`);
    shutdown(1, {});
  });
}

/**
 * Listens on HOST:PORT. Fastify's own "Server listening at" line per address goes to debug: the
 * ready line says where. A port taken since the check before start-up is still one line.
 */
async function listen(app: NestFastifyApplication) {
  const fastify = app.getHttpAdapter().getInstance();
  const quiet = logger.child({});
  quiet.info = quiet.debug;
  fastify.log = quiet;
  try {
    await app.listen({ port: env.PORT, host: env.HOST });
  } catch (error) {
    throw listenRefusal(error as NodeJS.ErrnoException, env.HOST, env.PORT);
  } finally {
    fastify.log = logger;
  }
}

/** The one line that says the service is ready: where, its documentation, what the start migrated, and the first step while there is no client. */
function readyLine(applied: number, noClientYet: boolean): string {
  const migrations = applied ? `applied ${applied} migration${applied === 1 ? '' : 's'}` : 'database schema up to date';
  const firstStep = noClientYet ? ' First client: npm run cli -- client:create --name my-device' : '';
  return `voyage-connect ready on http://${env.HOST}:${env.PORT} (public ${env.apiUrl}); API docs at ${env.apiUrl}/docs; ${migrations}.${firstStep}`;
}

/**
 * Health turns 503 (and stays so for SHUTDOWN_DELAY_MS while requests are still served, for load
 * balancers to notice), in-flight requests finish (or are cut after SHUTDOWN_TIMEOUT_MS), the
 * pool and the embedded database close. Whatever hangs, the process is gone after the deadline.
 */
async function stop(): Promise<void> {
  app?.get(HealthRegistryService).beginShutdown();
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
  // A port taken, a data folder another service holds, a database that cannot be reached or is
  // not installed, is reported like a bad setting: one line.
  if (error instanceof StartupRefusal) process.stderr.write(`${error.message}\n`);
  else logger.fatal({ err: error }, 'start-up failed');
  await stop().catch(() => {});
  process.exit(1);
}
