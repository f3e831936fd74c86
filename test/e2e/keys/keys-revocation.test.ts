import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyAdminService } from '../../../src/keys/key-admin.service.js';
import { KeysService } from '../../../src/keys/keys.service.js';
import { clientToken } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { query } from '../../setup/database.js';
import { reconnectListeners, startSecondInstance } from '../../setup/instances.js';
import { runCli } from '../../setup/processes.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const HISTORY = '/voyage/notification/v1/notifications?since=2020-01-01T00:00:00.000Z';
const KEK = Buffer.alloc(32, 7).toString('hex');

const historyStatus = async (app: TestApp, token: string) =>
  (await fetch(`${app.baseUrl}${HISTORY}`, { headers: { authorization: `Bearer ${token}` } })).status;
const publishedKids = async (app: TestApp) =>
  ((await (await fetch(`${app.baseUrl}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }).keys.map((key) => key.kid);
const kidOf = (token: string) => decodeProtectedHeader(token).kid!;

/**
 * keys:revoke from the built CLI (another process, as an operator runs it) while two instances
 * of the service run on one database: each hears of it only through PostgreSQL.
 */
describe('keys:revoke reaches every instance at once', () => {
  let first: TestApp;
  let second: TestApp;
  let device: TestClient;
  let cwd: string;
  const revoke = async (kid: string) => {
    const run = await runCli(['keys:revoke', kid], { cwd, env: { DATABASE_URL: first.databaseUrl, LOG_LEVEL: 'warn', KEYS_ENCRYPTION_KEY: KEK } });
    expect(run, run.stderr).toMatchObject({ code: 0 });
    return JSON.parse(run.stdout) as { kid: string; replaced_by: { kid: string; alg: string } | null };
  };
  /** A token both instances accept, and have remembered as verified. */
  const verifiedEverywhere = async () => {
    const token = await clientToken(first, device);
    for (const app of [first, second]) for (let time = 0; time < 2; time++) expect(await historyStatus(app, token)).toBe(200);
    return token;
  };

  beforeAll(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-keys-revocation-'));
    first = await startTestApp({ KEYS_ENCRYPTION_KEY: KEK, KEY_ACTIVATION_DELAY: '0' }); // its rotations retire the old key at once
    second = await startSecondInstance(first, { KEYS_ENCRYPTION_KEY: KEK });
    device = await createClient(first, { grants: ['client_credentials'] });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
    if (cwd) await rm(cwd, { recursive: true, force: true });
  });

  it('refuses the tokens of a revoked retired key on both instances, remembered ones included, and unpublishes it', async () => {
    const token = await verifiedEverywhere();
    const kid = kidOf(token);
    const rotated = await runCli(['keys:rotate'], { cwd, env: { DATABASE_URL: first.databaseUrl, KEYS_ENCRYPTION_KEY: KEK, KEY_ACTIVATION_DELAY: '0' } });
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(await historyStatus(second, token)).toBe(200); // retired keys still verify

    expect(await revoke(kid)).toMatchObject({ kid, replaced_by: null });
    for (const app of [first, second]) {
      await expect.poll(() => historyStatus(app, token), { timeout: 3_000, interval: 50 }).toBe(401);
      expect(await publishedKids(app)).not.toContain(kid);
    }
  });

  it('replaces a revoked active key on both instances: old tokens refused, new ones signed by the new key', async () => {
    const token = await verifiedEverywhere();
    const kid = kidOf(token);
    const heard: string[] = [];
    second.get(KeysService).onRevoked((revoked) => heard.push(revoked));

    const { replaced_by } = await revoke(kid);
    expect(replaced_by).toMatchObject({ kid: expect.any(String), alg: 'ES256' });
    expect(replaced_by!.kid).not.toBe(kid);
    for (const app of [first, second]) await expect.poll(() => historyStatus(app, token), { timeout: 3_000, interval: 50 }).toBe(401);
    expect(heard).toEqual([kid]);

    for (const app of [second, first]) {
      expect(await publishedKids(app)).toContain(replaced_by!.kid);
      expect(await publishedKids(app)).not.toContain(kid);
      const fresh = await clientToken(app, device);
      expect(kidOf(fresh)).toBe(replaced_by!.kid);
      expect(await historyStatus(first, fresh)).toBe(200);
      expect(await historyStatus(second, fresh)).toBe(200);
    }
  });

  it('still takes effect on an instance that missed the notice, once its listener is back', async () => {
    const token = await verifiedEverywhere();
    const kid = kidOf(token);
    await first.get(KeyAdminService).rotate();
    // Revoked without a NOTIFY: as if it was sent while the listeners were disconnected.
    await query(first.databaseUrl, 'UPDATE signing_keys SET revoked_at = now() WHERE kid = $1', [kid]);
    expect(await historyStatus(second, token)).toBe(200); // remembered, and nobody told it

    await reconnectListeners(second);
    await expect.poll(() => historyStatus(second, token), { timeout: 3_000, interval: 50 }).toBe(401);
    expect(second.get(KeysService).isRevoked(kid)).toBe(true);
  });
});
