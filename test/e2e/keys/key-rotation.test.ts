import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeProtectedHeader } from 'jose';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { KeyAdminService } from '../../../src/keys/key-admin.service.js';
import { clientToken } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { startSecondInstance } from '../../setup/instances.js';
import { runCli } from '../../setup/processes.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const HISTORY = '/voyage/notification/v1/notifications?since=2020-01-01T00:00:00.000Z';
/** Short, so the tests can wait for it; far shorter than the 30 s an instance keeps its copy of the keys. */
const ACTIVATION_DELAY_S = 2;

const historyStatus = async (app: TestApp, token: string) =>
  (await fetch(`${app.baseUrl}${HISTORY}`, { headers: { authorization: `Bearer ${token}` } })).status;
const publishedKids = async (app: TestApp) =>
  ((await (await fetch(`${app.baseUrl}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }).keys.map((key) => key.kid);
const kidOf = (token: string) => decodeProtectedHeader(token).kid!;

/**
 * Key rotation while two instances of the service run on one database: the new key is in the
 * JWKS before any token is signed with it, and every instance signs with it from its activation
 * on, not once the copy of the keys it holds for 30 s has run out.
 */
describe('key rotation reaches every instance', () => {
  let first: TestApp;
  let second: TestApp;
  let device: TestClient;
  let cwd: string;
  const tokenKid = async (app: TestApp) => kidOf(await clientToken(app, device));
  /** The kid both instances sign with now; both have just read their keys, and would keep them for 30 s. */
  const signingEverywhere = async () => {
    const kid = await tokenKid(first);
    expect(await tokenKid(second)).toBe(kid);
    return kid;
  };

  beforeAll(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-key-rotation-'));
  });
  afterAll(async () => {
    if (cwd) await rm(cwd, { recursive: true, force: true });
  });
  // Two fresh instances on a fresh database for each test: what one test rotated cannot decide the next.
  beforeEach(async () => {
    first = await startTestApp({ KEY_ACTIVATION_DELAY: String(ACTIVATION_DELAY_S) });
    second = await startSecondInstance(first);
    device = await createClient(first, { grants: ['client_credentials'] });
  });
  afterEach(async () => {
    await second?.close();
    await first?.close();
  });

  it('publishes the new keys at once while both instances sign with the old one, and both sign with the new one from its activation', async () => {
    const old = await signingEverywhere();
    const [oldEs256, oldRs256] = await publishedKids(first); // made together: ES256 first
    expect(oldEs256).toBe(old);
    const [rotated, rotatedRs256] = await first.get(KeyAdminService).rotate();
    const activatesAt = Date.parse(rotated.activates_at);

    for (const app of [first, second]) expect(await publishedKids(app)).toEqual([rotated.kid, rotatedRs256.kid, old, oldRs256]);
    for (const app of [first, second]) expect(await tokenKid(app)).toBe(old);
    expect(Date.now()).toBeLessThan(activatesAt); // what was checked above was before the activation

    await sleep(activatesAt + 1 - Date.now()); // +1: the printed time is cut to milliseconds
    for (const app of [second, first]) {
      const token = await clientToken(app, device);
      expect(kidOf(token)).toBe(rotated.kid);
      for (const verifier of [first, second]) expect(await historyStatus(verifier, token)).toBe(200);
    }
  });

  it("reaches a running instance by its notice when the CLI rotates, not when that instance's copy of the keys runs out", async () => {
    const old = await signingEverywhere();
    const run = await runCli(['keys:rotate'], { cwd, env: { DATABASE_URL: first.databaseUrl, LOG_LEVEL: 'warn', KEY_ACTIVATION_DELAY: '0' } });
    expect(run.code, run.stderr).toBe(0);
    const [rotated] = JSON.parse(run.stdout) as { kid: string; created_at: string; activates_at: string; retired: { kid: string } }[];
    expect(rotated.retired.kid).toBe(old);

    for (const app of [second, first]) await expect.poll(() => tokenKid(app), { timeout: 3_000, interval: 50 }).toBe(rotated.kid);
    expect(rotated.activates_at).toBe(rotated.created_at); // KEY_ACTIVATION_DELAY=0: it signs at once
  });
});
