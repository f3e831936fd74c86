import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEVICE_GRANT, pollDeviceToken, requestDeviceAuthorization, startDeviceAuthorization, verifyDevice } from '../../factories/device-flow.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { basicAuth, credentials, introspect, type PortalUser, postForm, refresh, storedHash, userId } from '../../factories/token-flow.factory.js';
import { query } from '../../setup/database.js';
import { startSecondInstance } from '../../setup/instances.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

/** As if the device's last poll of this device code was `seconds` ago (the interval is judged by the database clock). */
const lastPolledAgo = (app: TestApp, deviceCode: string, seconds: number) =>
  query(app.databaseUrl, `UPDATE device_codes SET last_polled_at = clock_timestamp() - make_interval(secs => $2) WHERE device_code_hash = $1`, [storedHash(deviceCode), seconds]);

describe('the standard device flow (RFC 8628)', () => {
  let app: TestApp;
  let device: TestClient;
  let user: PortalUser;

  beforeAll(async () => {
    app = await startTestApp({ DEVICE_CODE_TTL: '300', DEVICE_POLL_INTERVAL: '2' });
    device = await createClient(app, { grants: [DEVICE_GRANT, 'refresh_token'], scopes: ['voyages:read', 'reports:read'] });
    user = await createUser(app);
  });
  afterAll(() => app?.close());

  describe('POST /sso/device_authorization', () => {
    it('answers a device code, a user code and where to enter it, never cached (RFC 8628 §3.2)', async () => {
      const response = await requestDeviceAuthorization(app, device, { scope: 'voyages:read' });
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).toBe('no-store');
      const body = response.body;
      expect(Object.keys(body).sort()).toEqual(['device_code', 'expires_in', 'interval', 'user_code', 'verification_uri', 'verification_uri_complete']);
      expect(body.user_code).toMatch(USER_CODE);
      expect(body.verification_uri).toBe(`${app.baseUrl}/sso/device`);
      expect(body.verification_uri_complete).toBe(`${app.baseUrl}/sso/device?user_code=${body.user_code}`);
      expect(body).toMatchObject({ expires_in: 300, interval: 2 });
      // At least 128 random bits, and only its hash is stored.
      expect(Buffer.from(body.device_code, 'base64url').length).toBeGreaterThanOrEqual(16);
      const [row] = await query<{ user_code: string; scope: string }>(app.databaseUrl, 'SELECT user_code, scope FROM device_codes WHERE device_code_hash = $1', [storedHash(body.device_code)]);
      expect(row).toEqual({ user_code: body.user_code.replace('-', ''), scope: 'voyages:read' });
      const raw = await query(app.databaseUrl, `SELECT 1 FROM device_codes WHERE encode(device_code_hash, 'escape') LIKE '%' || $1 || '%'`, [body.device_code]);
      expect(raw).toHaveLength(0);
    });

    it('takes client_secret_basic as well', async () => {
      const response = await postForm(app, '/sso/device_authorization', {}, { authorization: basicAuth(device.id, device.secret) });
      expect(response.status).toBe(200);
    });

    it('refuses a wrong secret or none with 401 invalid_client, with WWW-Authenticate after Basic, storing nothing', async () => {
      const before = await deviceCodeCount();
      const wrong = await requestDeviceAuthorization(app, { ...device, secret: 'not-the-secret' });
      expect(wrong.status).toBe(401);
      expect(wrong.body).toMatchObject({ error: 'invalid_client' });
      const none = await postForm(app, '/sso/device_authorization', { client_id: device.id });
      expect(none.status).toBe(401);
      const basic = await postForm(app, '/sso/device_authorization', {}, { authorization: basicAuth(device.id, 'wrong') });
      expect(basic.status).toBe(401);
      expect(basic.headers.get('www-authenticate')).toMatch(/^Basic/);
      expect(await deviceCodeCount()).toBe(before);
    });

    it('refuses a client registered without the device grant with 400 unauthorized_client', async () => {
      const helperClient = await createClient(app);
      const response = await requestDeviceAuthorization(app, helperClient);
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ error: 'unauthorized_client' });
      expect(response.headers.get('cache-control')).toBe('no-store');
    });

    it('refuses a scope the client may not ask for with invalid_scope, and a malformed one with invalid_request', async () => {
      expect((await requestDeviceAuthorization(app, device, { scope: 'voyages:read admin' })).body).toMatchObject({ error: 'invalid_scope' });
      expect((await requestDeviceAuthorization(app, device, { scope: 'a\\b' })).body).toMatchObject({ error: 'invalid_request' });
    });

    it('refuses a JSON body (415) and a repeated parameter with invalid_request', async () => {
      const json = await postForm(app, '/sso/device_authorization', JSON.stringify(credentials(device)), { 'content-type': 'application/json' });
      expect(json.status).toBe(415);
      expect(json.body).toMatchObject({ error: 'invalid_request' });
      const repeated = await postForm(app, '/sso/device_authorization', `${new URLSearchParams(credentials(device))}&scope=a&scope=b`);
      expect(repeated.body).toMatchObject({ error: 'invalid_request' });
    });

    it('is listed in the metadata with the grant (RFC 8414, RFC 8628 §4)', async () => {
      const metadata = (await (await fetch(`${app.baseUrl}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
      expect(metadata.device_authorization_endpoint).toBe(`${app.baseUrl}/sso/device_authorization`);
      expect(metadata.grant_types_supported).toContain(DEVICE_GRANT);
    });
  });

  describe('polling /sso/token with the device grant', () => {
    it('answers authorization_pending to the first poll, never slow_down', async () => {
      const { device_code } = await startDeviceAuthorization(app, device);
      const poll = await pollDeviceToken(app, device, device_code);
      expect(poll.status).toBe(400);
      expect(poll.body).toMatchObject({ error: 'authorization_pending' });
      expect(poll.headers.get('cache-control')).toBe('no-store');
    });

    it('answers slow_down to a poll within the interval, and grows that device code\'s interval by 5 s each time (§3.5)', async () => {
      const { device_code } = await startDeviceAuthorization(app, device);
      expect((await pollDeviceToken(app, device, device_code)).body).toMatchObject({ error: 'authorization_pending' });
      expect((await pollDeviceToken(app, device, device_code)).body).toMatchObject({ error: 'slow_down' });
      // 3 s after the last poll: past the configured 2 s, but within the grown 7 s.
      await lastPolledAgo(app, device_code, 3);
      expect((await pollDeviceToken(app, device, device_code)).body).toMatchObject({ error: 'slow_down' });
      // Now 12 s: 8 s is within it, 13 s is not.
      await lastPolledAgo(app, device_code, 8);
      expect((await pollDeviceToken(app, device, device_code)).body).toMatchObject({ error: 'slow_down' });
      await lastPolledAgo(app, device_code, 18);
      expect((await pollDeviceToken(app, device, device_code)).body).toMatchObject({ error: 'authorization_pending' });
      const [{ interval_seconds }] = await query<{ interval_seconds: number }>(app.databaseUrl, 'SELECT interval_seconds FROM device_codes WHERE device_code_hash = $1', [storedHash(device_code)]);
      expect(interval_seconds).toBe(2 + 3 * 5);
    });

    it('lets a device that keeps to the interval poll without slow_down', async () => {
      const { device_code, interval } = await startDeviceAuthorization(app, device);
      for (let poll = 0; poll < 3; poll++) {
        expect((await pollDeviceToken(app, device, device_code)).body).toMatchObject({ error: 'authorization_pending' });
        await lastPolledAgo(app, device_code, interval);
      }
    });

    it('issues tokens once after the user approved: scope as asked, a refresh token, a user token of the device flow', async () => {
      const authorization = await startDeviceAuthorization(app, device, { scope: 'voyages:read' });
      await verifyDevice(app, authorization.user_code, user);
      const response = await pollDeviceToken(app, device, authorization.device_code);
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(Object.keys(response.body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
      expect(response.body).toMatchObject({ token_type: 'bearer', expires_in: 3600, scope: 'voyages:read' });
      const claims = decodeJwt(response.body.access_token as string);
      expect(claims).toMatchObject({ sub: await userId(app, user), client_id: device.id, scope: 'voyages:read' });
      expect((await introspect(app, device, response.body.access_token as string)).body).toMatchObject({ active: true, sub: await userId(app, user) });

      // The same device code again (after the interval): the token was handed out once.
      await lastPolledAgo(app, authorization.device_code, 60);
      const again = await pollDeviceToken(app, device, authorization.device_code);
      expect(again.status).toBe(400);
      expect(again.body).toMatchObject({ error: 'invalid_grant' });
    });

    it('omits scope when the grant has none (RFC 6749 §5.1), also on refresh, and rotates the refresh token', async () => {
      const authorization = await startDeviceAuthorization(app, device);
      await verifyDevice(app, authorization.user_code, user);
      const tokens = await pollDeviceToken(app, device, authorization.device_code);
      expect(tokens.status).toBe(200);
      expect(tokens.body).not.toHaveProperty('scope');
      const refreshed = await refresh(app, device, tokens.body.refresh_token as string);
      expect(refreshed.status).toBe(200);
      expect(refreshed.body).not.toHaveProperty('scope');
      expect(refreshed.body.refresh_token).not.toBe(tokens.body.refresh_token);
      // Reuse of the retired refresh token is theft, as for the helper's grants.
      expect((await refresh(app, device, tokens.body.refresh_token as string)).body).toMatchObject({ error: 'invalid_grant' });
      expect((await introspect(app, device, refreshed.body.access_token as string)).body).toEqual({ active: false });
    });

    it('gives no refresh token to a client registered without the refresh_token grant', async () => {
      const tv = await createClient(app, { grants: [DEVICE_GRANT] });
      const authorization = await startDeviceAuthorization(app, tv);
      await verifyDevice(app, authorization.user_code, user);
      const response = await pollDeviceToken(app, tv, authorization.device_code);
      expect(response.status).toBe(200);
      expect(Object.keys(response.body).sort()).toEqual(['access_token', 'expires_in', 'token_type']);
    });

    it('answers access_denied after the user denied, and keeps answering it', async () => {
      const authorization = await startDeviceAuthorization(app, device);
      await verifyDevice(app, authorization.user_code, user, 'deny');
      expect((await pollDeviceToken(app, device, authorization.device_code)).body).toMatchObject({ error: 'access_denied' });
      await lastPolledAgo(app, authorization.device_code, 60);
      expect((await pollDeviceToken(app, device, authorization.device_code)).body).toMatchObject({ error: 'access_denied' });
    });

    it('answers expired_token once the device code has expired, by the database clock', async () => {
      const authorization = await startDeviceAuthorization(app, device);
      await query(app.databaseUrl, `UPDATE device_codes SET expires_at = now() - interval '1 second' WHERE device_code_hash = $1`, [storedHash(authorization.device_code)]);
      expect((await pollDeviceToken(app, device, authorization.device_code)).body).toMatchObject({ error: 'expired_token' });
    });

    it("answers invalid_grant for an unknown device code and for another client's, leaving the other's alone", async () => {
      expect((await pollDeviceToken(app, device, 'no-such-device-code')).body).toMatchObject({ error: 'invalid_grant' });
      const other = await createClient(app, { grants: [DEVICE_GRANT] });
      const authorization = await startDeviceAuthorization(app, device);
      await verifyDevice(app, authorization.user_code, user);
      const stolen = await pollDeviceToken(app, other, authorization.device_code);
      expect(stolen.status).toBe(400);
      expect(stolen.body).toMatchObject({ error: 'invalid_grant' });
      // The rightful device was not slowed down or robbed by it.
      expect((await pollDeviceToken(app, device, authorization.device_code)).status).toBe(200);
    });

    it('answers invalid_request without device_code, and unauthorized_client for a client without the grant', async () => {
      expect((await postForm(app, '/sso/token', { grant_type: DEVICE_GRANT, ...credentials(device) })).body).toMatchObject({ error: 'invalid_request' });
      const helperClient = await createClient(app);
      expect((await pollDeviceToken(app, helperClient, 'anything')).body).toMatchObject({ error: 'unauthorized_client' });
    });

    it('counts authorizations and polls in /metrics', async () => {
      const metrics = await (await fetch(`${app.baseUrl}/metrics`)).text();
      const value = (line: string) => Number(new RegExp(`^${line.replace(/[{}]/g, '\\$&')} (\\d+)`, 'm').exec(metrics)?.[1] ?? 0);
      expect(value('device_authorizations_total{event="started"}')).toBeGreaterThanOrEqual(10);
      expect(value('device_authorizations_total{event="approved"}')).toBeGreaterThanOrEqual(4);
      expect(value('device_authorizations_total{event="denied"}')).toBeGreaterThanOrEqual(1);
      for (const outcome of ['approved', 'authorization_pending', 'slow_down', 'access_denied', 'expired_token', 'invalid_grant']) {
        expect(value(`device_code_polls_total{outcome="${outcome}"}`), outcome).toBeGreaterThanOrEqual(1);
      }
    });
  });

  const deviceCodeCount = async () => Number((await query<{ n: string }>(app.databaseUrl, 'SELECT count(*) AS n FROM device_codes'))[0].n);
});

describe('the device flow on two instances', () => {
  let first: TestApp;
  let second: TestApp;
  let device: TestClient;

  beforeAll(async () => {
    first = await startTestApp({ DEVICE_POLL_INTERVAL: '5' });
    second = await startSecondInstance(first);
    device = await createClient(first, { grants: [DEVICE_GRANT] });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it('answers slow_down on one instance to a device that just polled the other, and grows the interval for both', async () => {
    const { device_code } = await startDeviceAuthorization(first, device);
    expect((await pollDeviceToken(first, device, device_code)).body).toMatchObject({ error: 'authorization_pending' });
    expect((await pollDeviceToken(second, device, device_code)).body).toMatchObject({ error: 'slow_down' });
    // 7 s later: past the first 5 s, within the 10 s the second instance set.
    await lastPolledAgo(first, device_code, 7);
    expect((await pollDeviceToken(first, device, device_code)).body).toMatchObject({ error: 'slow_down' });
  });

  it('hands the tokens of an approval made through one instance to a device polling the other, once', async () => {
    const user = await createUser(first);
    const authorization = await startDeviceAuthorization(first, device);
    await verifyDevice(first, authorization.user_code, user);
    const polls = await Promise.all([pollDeviceToken(first, device, authorization.device_code), pollDeviceToken(second, device, authorization.device_code)]);
    expect(polls.map((poll) => poll.status).sort()).toEqual([200, 400]);
    // The loser waited for the winner's row lock and found the device code used.
    expect(polls.find((poll) => poll.status === 400)!.body).toMatchObject({ error: 'invalid_grant' });
  });
});
