import { expect } from 'vitest';
import { LISTENER_NAME, PgListenerService } from '../../src/database/pg-listener.service.js';
import { query } from './database.js';
import { startTestApp, type TestApp } from './test-app.js';

/** Another instance of the same service: behind the same public address, on the same database. */
export function startSecondInstance(first: TestApp, vars: Record<string, string> = {}): Promise<TestApp> {
  const urls = { IDENTITY_URL: first.baseUrl, API_URL: first.baseUrl, FRONTEND_URL: first.baseUrl };
  return startTestApp({ ...vars, ...urls }, first.databaseUrl);
}

/**
 * Cuts every instance's LISTEN connection, so what is NOTIFYed meanwhile is lost, and waits until
 * `instance` has noticed and is listening again.
 */
export async function reconnectListeners(instance: TestApp): Promise<void> {
  await query(instance.databaseUrl, 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()', [LISTENER_NAME]);
  await expect.poll(() => instance.get(PgListenerService).isListening, { timeout: 5000, interval: 20 }).toBe(false);
  await expect.poll(() => instance.get(PgListenerService).isListening, { timeout: 5000, interval: 20 }).toBe(true);
}
