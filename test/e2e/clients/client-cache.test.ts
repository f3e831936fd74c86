import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { createClient } from '../../factories/oauth.factory.js';
import { runCli } from '../../setup/processes.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const tokenStatus = async (app: TestApp, id: string, secret: string) =>
  (
    await fetch(`${app.baseUrl}/public/api/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: id, client_secret: secret }),
    })
  ).status;

/** Client records are cached per instance; a change made anywhere must reach every instance at once. */
describe('the client cache across instances', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await startTestApp();
    b = await startTestApp({}, a.databaseUrl);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('refuses a client on instance B soon after it is disabled through instance A, and accepts it again when enabled', async () => {
    const client = await createClient(a, { grants: ['client_credentials'] });
    expect(await tokenStatus(b, client.id, client.secret)).toBe(200); // B has it cached now
    await a.get(ClientsService).setEnabled(client.id, false);
    await expect.poll(() => tokenStatus(b, client.id, client.secret), { timeout: 2_000, interval: 50 }).toBe(401);
    await a.get(ClientsService).setEnabled(client.id, true);
    await expect.poll(() => tokenStatus(b, client.id, client.secret), { timeout: 2_000, interval: 50 }).toBe(200);
  });

  it('accepts a rotated secret on instance B soon after client:rotate-secret in another process', async () => {
    const client = await createClient(a, { grants: ['client_credentials'] });
    expect(await tokenStatus(b, client.id, client.secret)).toBe(200);
    const rotated = await runCli(['client:rotate-secret', client.id], { env: { DATABASE_URL: a.databaseUrl, LOG_LEVEL: 'warn' } });
    expect(rotated.code, rotated.stderr).toBe(0);
    const { client_secret: fresh } = JSON.parse(rotated.stdout) as { client_secret: string };
    await expect.poll(() => tokenStatus(b, client.id, fresh), { timeout: 2_000, interval: 50 }).toBe(200);
    expect(await tokenStatus(b, client.id, client.secret)).toBe(200); // the previous one works during the overlap
  });
});
