import 'reflect-metadata';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp } from './app.js';
import { createRootLogger } from './common/logging/logger.js';
import { type Env, InvalidConfigError, loadProcessEnv } from './config/env.js';
import { type DatabaseServer, openDatabaseServer } from './database/database-server.js';

let env: Env;
try {
  env = loadProcessEnv();
} catch (error) {
  if (!(error instanceof InvalidConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
}

const logger = createRootLogger({ level: env.LOG_LEVEL });
let database: DatabaseServer | undefined;
let app: NestFastifyApplication | undefined;

async function start() {
  database = await openDatabaseServer(env, 'service', (line) => logger.info({ context: 'EmbeddedPostgres' }, line));
  app = await createApp(env, database.url, logger);
  await app.listen({ port: env.PORT, host: env.HOST });
}

/** Health turns 503, in-flight requests finish (or are cut after SHUTDOWN_TIMEOUT_MS), the pool and the embedded database close. */
async function stop(): Promise<void> {
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
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    stopping ??= (async () => {
      logger.info({ signal }, 'shutting down: draining requests');
      await starting.catch(() => {}); // a signal during start-up waits for it, then undoes it
      await stop();
      logger.info('stopped');
    })().then(
      () => process.exit(0),
      (error) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}

try {
  await starting;
} catch (error) {
  logger.fatal({ err: error }, 'start-up failed');
  await stop().catch(() => {});
  process.exit(1);
}
