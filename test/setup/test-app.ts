import { Writable } from 'node:stream';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp } from '../../src/app.js';
import { createRootLogger } from '../../src/common/logging/logger.js';
import { type Env, loadEnv } from '../../src/config/env.js';
import { createTestDatabase } from './database.js';
import { freePort } from './free-port.js';

export interface TestApp {
  app: NestFastifyApplication;
  env: Env;
  baseUrl: string;
  databaseUrl: string;
  /** Every log line the app wrote, parsed. */
  logs: Record<string, unknown>[];
  get<T>(type: new (...args: never[]) => T): T;
  close(): Promise<void>;
}

/**
 * The whole service on a real HTTP port and its own database. Logs are captured at debug level
 * so tests can assert what (never) reaches them.
 */
export async function startTestApp(vars: Record<string, string> = {}, databaseUrl?: string): Promise<TestApp> {
  const url = databaseUrl ?? (await createTestDatabase());
  // A known port up front, so the public URLs (issuer, authorize_url, code_url) are the real ones.
  const port = Number(vars.PORT ?? (await freePort()));
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = loadEnv({ API_URL: baseUrl, FRONTEND_URL: baseUrl, IDENTITY_URL: baseUrl, ...vars, PORT: String(port), DATABASE_URL: url });
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) logs.push(JSON.parse(line));
      done();
    },
  });
  const logger = createRootLogger({ level: 'debug', destination: sink });
  const app = await createApp(env, url, logger);
  await app.listen({ port, host: '127.0.0.1' });
  return {
    app,
    env,
    logs,
    databaseUrl: url,
    baseUrl,
    get: (type) => app.get(type),
    // As the service's own shutdown does after SHUTDOWN_TIMEOUT_MS: a client connection that never
    // sent a request (undici opens some) would otherwise hold the close for HTTP_HEADERS_TIMEOUT_MS.
    close: async () => {
      const cutoff = setTimeout(() => app.getHttpServer().closeAllConnections(), 3_000);
      try {
        await app.close();
      } finally {
        clearTimeout(cutoff);
      }
    },
  };
}
