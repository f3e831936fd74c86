import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { KeyAdminService } from '../../../src/keys/key-admin.service.js';
import { clientToken } from '../../factories/notification.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { issueTokens, LOOPBACK_PATTERN, LOOPBACK_REDIRECT, type PortalUser, refresh } from '../../factories/token-flow.factory.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// Instances of a fleet never agree on the time to the second; the database's clock decides every
// stored expiry, so a service whose clock is off still issues codes and refresh tokens that work.
describe('expiries by the database clock', () => {
  let app: TestApp;
  let client: TestClient;
  let user: PortalUser;

  beforeAll(async () => {
    app = await startTestApp({ AUTH_CODE_TTL: '30', REFRESH_TOKEN_TTL: '60', CODE_POLL_MIN_INTERVAL: '0', CLIENT_SECRET_OVERLAP: '60' });
    client = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
    user = await createUser(app);
  });
  afterEach(() => vi.useRealTimers());
  afterAll(() => app.close());

  it('issues codes and refresh tokens that work while this process runs two minutes behind the database', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 120_000, shouldAdvanceTime: true });
    const tokens = await issueTokens(app, client, user, { redirectUrl: LOOPBACK_REDIRECT });
    const refreshed = await refresh(app, client, tokens.refresh_token);
    expect(refreshed.status, refreshed.text).toBe(200);
    vi.useRealTimers();
    expect(await remainingLifetime(app, (refreshed.body as { refresh_token: string }).refresh_token)).toBeGreaterThan(50);
  });

  it('issues refresh tokens that are not valid longer while this process runs two minutes ahead', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 120_000, shouldAdvanceTime: true });
    const tokens = await issueTokens(app, client, user, { redirectUrl: LOOPBACK_REDIRECT });
    vi.useRealTimers();
    expect(await remainingLifetime(app, tokens.refresh_token)).toBeLessThanOrEqual(60);
  });

  it('keeps a rotated-out client secret working for its overlap when the rotating process runs two minutes behind', async () => {
    const rotated = await createClient(app, { grants: ['client_credentials'] });
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 120_000, shouldAdvanceTime: true });
    const { client_secret } = await app.get(ClientsService).rotateSecret(rotated.id);
    vi.useRealTimers();
    // Read by an instance with the right time (this one, now): the old secret is still within its 60 s.
    expect(await clientToken(app, rotated)).toBeTruthy();
    expect(await clientToken(app, { ...rotated, secret: client_secret })).toBeTruthy();
  });

  it('ends the overlap of a rotated-out secret by the database clock when the rotating process runs two minutes ahead', async () => {
    const rotated = await createClient(app, { grants: ['client_credentials'] });
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 120_000, shouldAdvanceTime: true });
    await app.get(ClientsService).rotateSecret(rotated.id);
    vi.useRealTimers();
    const [row] = await query<{ left: number }>(app.databaseUrl, 'SELECT extract(epoch FROM previous_secret_expires_at - now())::int AS left FROM clients WHERE id = $1', [rotated.id]);
    expect(row.left).toBeLessThanOrEqual(60);
  });

  it('keeps a rotated-out signing key published for its stored lifetime by the database clock, whatever the rotating clock says', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 120_000, shouldAdvanceTime: true });
    const [{ kid, retired }] = await app.get(KeyAdminService).rotate('ES256');
    vi.useRealTimers();
    const [row] = await query<{ left: number; lifetime: number; activation: number }>(
      app.databaseUrl,
      `SELECT extract(epoch FROM retired.expires_at - now())::int AS left, retired.retired_lifetime_seconds AS lifetime,
              extract(epoch FROM rotated.activates_at - now())::int AS activation
       FROM signing_keys retired, signing_keys rotated WHERE retired.kid = $1 AND rotated.kid = $2`,
      [retired.kid, kid],
    );
    // It signs until the new key activates (KEY_ACTIVATION_DELAY later, by the same clock), then stays published.
    const delay = app.env.KEY_ACTIVATION_DELAY;
    expect(row.activation).toBeGreaterThan(delay - 10);
    expect(row.activation).toBeLessThanOrEqual(delay);
    expect(row.left).toBeGreaterThan(delay + row.lifetime - 10);
    expect(row.left).toBeLessThanOrEqual(delay + row.lifetime);
  });
});

/** Seconds the stored refresh token has left, by the database's clock. */
async function remainingLifetime(app: TestApp, refreshToken: string): Promise<number> {
  const [row] = await query<{ lifetime: number }>(
    app.databaseUrl,
    "SELECT extract(epoch FROM expires_at - now())::int AS lifetime FROM refresh_tokens WHERE token_hash = sha256(convert_to($1, 'UTF8'))",
    [refreshToken],
  );
  return row.lifetime;
}
