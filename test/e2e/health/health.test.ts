import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDatabase, startEmbeddedPostgres, type EmbeddedPostgres } from '../../../src/database/embedded-postgres.js';
import { freePort } from '../../setup/free-port.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const health = async (app: TestApp) => {
  const response = await fetch(`${app.baseUrl}/health`);
  return { status: response.status, body: (await response.json()) as Record<string, string> };
};

describe('GET /health', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ APP_ENV: 'staging' });
  });
  afterAll(() => app.close());

  it('answers 200 with the documented body when PostgreSQL answers', async () => {
    const { status, body } = await health(app);
    expect(status).toBe(200);
    expect(body).toEqual({
      status: 'up',
      version: '0.1.0',
      info: 'all components healthy',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      env: 'staging',
    });
  });

  it('answers /health/live with 200', async () => {
    const response = await fetch(`${app.baseUrl}/health/live`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'up' });
  });

  it('answers 503 once shutdown has begun', async () => {
    const other = await startTestApp({}, app.databaseUrl);
    const { HealthRegistryService } = await import('../../../src/health/health-registry.service.js');
    other.get(HealthRegistryService).beginShutdown();
    const { status, body } = await health(other);
    expect(status).toBe(503);
    expect(body).toMatchObject({ status: 'down', info: 'unhealthy: shutting down' });
    await other.close();
  });
});

describe('GET /health while PostgreSQL stops and comes back', () => {
  let dataDir: string;
  let port: number;
  let server: EmbeddedPostgres;
  let app: TestApp;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'voyage-connect-health-'));
    port = await freePort();
    server = await startEmbeddedPostgres({ dataDir, port });
    await ensureDatabase(server.url(), 'app');
    app = await startTestApp({ HEALTH_DB_TIMEOUT_MS: '1000' }, server.url('app'));
  });
  afterAll(async () => {
    await app?.close();
    await server?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('answers 503 naming the database within seconds, then 200 again without a restart', async () => {
    expect((await health(app)).status).toBe(200);
    await server.stop();

    const started = Date.now();
    const down = await health(app);
    expect(down.status).toBe(503);
    expect(down.body.status).toBe('down');
    // Both the pool and the notification listener lose PostgreSQL.
    expect(down.body.info).toMatch(/^unhealthy: /);
    expect(down.body.info).toContain('database');
    expect(down.body.info).toContain('notification-listener (not listening)');
    expect(Date.now() - started).toBeLessThan(5000);

    server = await startEmbeddedPostgres({ dataDir, port });
    await expect.poll(async () => (await health(app)).status, { timeout: 10_000, interval: 200 }).toBe(200);
  });
});
