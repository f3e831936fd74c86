import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { KeysService } from '../../../src/keys/keys.service.js';
import { clientToken, SUBSCRIBE_SCOPE } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { openStream } from '../../factories/stream.factory.js';
import { issueTokens, LOOPBACK_PATTERN, LOOPBACK_REDIRECT, refresh } from '../../factories/token-flow.factory.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// The admin API from outside, as a portal's backend and its support desk use it: tokens of
// clients holding admin:read / admin:write, the CLI's rules behind every route, each change in
// the audit trail as the calling client's.

describe('the admin API (/admin/v1)', () => {
  let app: TestApp;
  let admin: TestClient;
  let adminToken: string;
  let readerToken: string;
  let device: TestClient;

  const call = (method: string, path: string, token: string | null = adminToken, body?: unknown) =>
    fetch(`${app.baseUrl}/admin/v1${path}`, {
      method,
      headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const json = async (response: Response, status: number) => {
    const text = await response.text();
    expect(response.status, text).toBe(status);
    return JSON.parse(text);
  };

  beforeAll(async () => {
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0', KEY_ACTIVATION_DELAY: '0' });
    admin = await createClient(app, { grants: ['client_credentials'], scopes: ['admin:read', 'admin:write'] });
    adminToken = await clientToken(app, admin, 'admin:read admin:write');
    readerToken = await clientToken(app, await createClient(app, { grants: ['client_credentials'], scopes: ['admin:read'] }), 'admin:read');
    device = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN], scopes: [SUBSCRIBE_SCOPE] });
  });
  afterAll(async () => {
    await app?.close();
  });

  it("creates a user who signs in; disabling her fails her refresh with invalid_grant and closes her stream; all in the audit trail as the caller's", async () => {
    const created = await json(await call('POST', '/users', adminToken, { username: 'alice', password: 'correct horse battery staple' }), 201);
    expect(created).toMatchObject({ username: 'alice', enabled: true });
    expect(created).not.toHaveProperty('password_hash');
    expect(await json(await call('POST', '/users', adminToken, { username: 'alice', password: 'another good password' }), 409)).toMatchObject({ message: expect.stringContaining('alice') });
    expect((await json(await call('POST', '/users', adminToken, { username: 'bob', password: 'short' }), 400)).errors).toBeDefined();

    const tokens = await issueTokens(app, device, { username: 'alice', password: 'correct horse battery staple' }, { redirectUrl: LOOPBACK_REDIRECT, scope: SUBSCRIBE_SCOPE });
    const stream = await openStream(app.baseUrl, tokens.access_token);
    const grants = await json(await call('GET', '/users/alice/grants', readerToken), 200);
    expect(grants).toEqual([expect.objectContaining({ client_id: device.id, created_address: '127.0.0.1' })]);

    const disabled = await json(await call('POST', '/users/alice/disable'), 200);
    expect(disabled).toMatchObject({ username: 'alice', enabled: false, revoked_grants: 1 });
    const refreshed = await refresh(app, device, tokens.refresh_token);
    expect(refreshed.status).toBe(400);
    expect(refreshed.body).toMatchObject({ error: 'invalid_grant' });
    expect((await stream.closed).code).toBe(1008);
    expect(await json(await call('GET', '/users/alice/grants', readerToken), 200)).toEqual([]);
    expect(await json(await call('POST', '/users/alice/enable'), 200)).toMatchObject({ enabled: true });

    const events = await json(await call('GET', '/events?username=ALICE', readerToken), 200);
    expect(events.map((event: { action: string }) => event.action)).toEqual(['user.enabled', 'user.disabled', 'user.created']);
    for (const event of events) expect(event.actor).toEqual({ kind: 'client', client_id: admin.id });
    const logged = app.logs.filter((line) => String(line.event).startsWith('admin.user.') && line.username === 'alice');
    expect(logged.map((line) => line.event)).toEqual(['admin.user.created', 'admin.user.disabled', 'admin.user.enabled']);
    expect(logged[1]).toMatchObject({ clientId: admin.id, address: '127.0.0.1', details: { revoked_grants: 1 } });
    // A change through HTTP is told as admin.*, not as the CLI's event.
    expect(app.logs.filter((line) => line.event === 'user.disabled')).toEqual([]);
    expect(JSON.stringify(app.logs)).not.toContain('correct horse battery staple');
    expect(app.logs.some((line) => line.event === 'admin.read' && line.route === 'GET /admin/v1/users/:username/grants')).toBe(true);
  });

  it('signs a user out of one client, and of one device by its grant id', async () => {
    await json(await call('POST', '/users', adminToken, { username: 'carol', password: 'correct horse battery staple' }), 201);
    const user = { username: 'carol', password: 'correct horse battery staple' };
    const other = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
    const tablets = [await issueTokens(app, device, user, { redirectUrl: LOOPBACK_REDIRECT }), await issueTokens(app, device, user, { redirectUrl: LOOPBACK_REDIRECT })];
    const elsewhere = await issueTokens(app, other, user, { redirectUrl: LOOPBACK_REDIRECT });
    const grants: { grant_id: string; client_id: string }[] = await json(await call('GET', '/users/carol/grants', readerToken), 200);
    expect(grants).toHaveLength(3);

    const first = grants.find((grant) => grant.client_id === device.id)!;
    expect(await json(await call('DELETE', `/users/carol/grants/${first.grant_id}`), 200)).toMatchObject({ grant_id: first.grant_id, revoked_grants: 1 });
    const outcomes = await Promise.all(tablets.map(async (tablet) => (await refresh(app, device, tablet.refresh_token)).status));
    expect(outcomes.sort()).toEqual([200, 400]);
    expect(await json(await call('DELETE', `/users/carol/grants/${randomUUID()}`), 404)).toMatchObject({ message: expect.any(String) });
    expect(await json(await call('DELETE', '/users/carol/grants/not-a-grant'), 404)).toMatchObject({ message: expect.any(String) });

    expect(await json(await call('DELETE', `/users/carol/grants?client_id=${other.id}`), 200)).toMatchObject({ client_id: other.id, revoked_grants: 1 });
    expect((await refresh(app, other, elsewhere.refresh_token)).status).toBe(400);
    expect(await json(await call('DELETE', '/users/carol/grants?client_id=nobody'), 404)).toMatchObject({ message: expect.stringContaining('nobody') });
    expect(await json(await call('DELETE', '/users/nobody/grants'), 404)).toMatchObject({ message: expect.stringContaining('nobody') });
  });

  it('rotates the keys: the new key is in the JWKS at once', async () => {
    const before = await json(await call('GET', '/keys', readerToken), 200);
    const rotated: { kid: string }[] = await json(await call('POST', '/keys/rotate'), 200);
    expect(rotated.length).toBeGreaterThan(0);
    const jwks = (await (await fetch(`${app.baseUrl}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] };
    for (const key of rotated) expect(jwks.keys.map((jwk) => jwk.kid)).toContain(key.kid);
    expect((await json(await call('GET', '/keys', readerToken), 200)).length).toBe(before.length + rotated.length);
    const [row] = await query<{ actor: string }>(app.databaseUrl, "SELECT actor FROM audit_events WHERE action = 'key.rotated' ORDER BY id DESC LIMIT 1");
    expect(row.actor).toBe(admin.id);
  });

  it('lists identity providers, and one client by id (never a secret)', async () => {
    expect(await json(await call('GET', '/identity-providers', readerToken), 200)).toEqual([]);
    const shown = await json(await call('GET', `/clients/${device.id}`, readerToken), 200);
    expect(shown).toMatchObject({ client_id: device.id });
    expect(JSON.stringify(shown)).not.toMatch(/secret_hash|client_secret"/);
    expect(await json(await call('GET', '/clients/unknown', readerToken), 404)).toMatchObject({ message: expect.stringContaining('unknown') });
  });

  it('pages through 1,050 clients without gaps or repeats', async () => {
    // Made in one statement: this test is about the pages, not about making clients.
    const made = await query<{ client_id: string }>(
      app.databaseUrl,
      `INSERT INTO clients (id, name, grants, redirect_patterns, scopes, scope_descriptions, sign_in, enabled, secret_hash)
       SELECT substr(md5(n::text || random()::text), 1, 22), 'paged-' || n, '{client_credentials}', '{}', '{}', '{}', '{local}', true, '\\x00'
       FROM generate_series(1, 1050) AS n RETURNING id AS client_id`,
    );
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page: { client_id: string; client_secret?: string }[] = await json(await call('GET', `/clients?limit=100${after ? `&after=${after}` : ''}`, readerToken), 200);
      expect(page.length).toBeLessThanOrEqual(100);
      for (const client of page) expect(client).not.toHaveProperty('client_secret');
      seen.push(...page.map((client) => client.client_id));
      if (page.length < 100) break;
      after = page.at(-1)!.client_id;
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...seen].sort());
    for (const client of made) expect(seen).toContain(client.client_id);
    expect((await json(await call('GET', '/clients?limit=1000', readerToken), 200)).length).toBe(1000);
    for (const bad of ['limit=0', 'limit=1001', 'limit=ten', 'after=%00', `after=${'x'.repeat(65)}`]) {
      expect((await call('GET', `/clients?${bad}`, readerToken)).status, bad).toBe(400);
    }
    expect((await call('GET', '/users?after=not-a-uuid', readerToken)).status).toBe(400);
  });

  describe('who may call', () => {
    const ROUTES: [string, string, 'read' | 'write'][] = [
      ['GET', '/clients', 'read'],
      ['GET', '/clients/x', 'read'],
      ['GET', '/users', 'read'],
      ['POST', '/users', 'write'],
      ['POST', '/users/alice/disable', 'write'],
      ['POST', '/users/alice/enable', 'write'],
      ['GET', '/users/alice/grants', 'read'],
      ['DELETE', '/users/alice/grants', 'write'],
      ['GET', '/keys', 'read'],
      ['POST', '/keys/rotate', 'write'],
      ['GET', '/identity-providers', 'read'],
      ['GET', '/events', 'read'],
    ];

    /** A token signed with the service's own key, for `client`, with these scope and times. */
    async function signed(client: TestClient, scope: string, exp: number) {
      const key = await app.get(KeysService).signingKey();
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ client_id: client.id, scope, jti: randomUUID() })
        .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
        .setIssuer(app.baseUrl)
        .setSubject(client.id)
        .setAudience(app.baseUrl)
        .setIssuedAt(Math.min(now, exp - 60))
        .setExpirationTime(exp)
        .sign(key.privateKey);
    }

    it("refuses every route without a token, with a forged, an expired or a disabled client's token (401), and without the scope (403), changing nothing", async () => {
      const now = Math.floor(Date.now() / 1000);
      const [header, payload] = adminToken.split('.');
      const forged = `${header}.${payload}.${Buffer.from('not the signature').toString('base64url')}`;
      const expired = await signed(admin, 'admin:read admin:write', now - 60);
      const soonDisabled = await createClient(app, { grants: ['client_credentials'], scopes: ['admin:read', 'admin:write'] });
      const disabledToken = await clientToken(app, soonDisabled, 'admin:read admin:write');
      await app.get(ClientsService).setEnabled(soonDisabled.id, false);
      const subscriberToken = await clientToken(app, await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] }), SUBSCRIBE_SCOPE);
      const eventsBefore = await query(app.databaseUrl, 'SELECT count(*) FROM audit_events');

      for (const [method, path, need] of ROUTES) {
        const body = method === 'POST' && path === '/users' ? { username: 'mallory', password: 'correct horse battery staple' } : undefined;
        const none = await call(method, path, null, body);
        expect(none.status, `${method} ${path}`).toBe(401);
        expect(none.headers.get('www-authenticate')).toBe('Bearer realm="voyage-connect"');
        for (const token of [forged, expired, disabledToken]) {
          const refused = await call(method, path, token, body);
          expect(refused.status, `${method} ${path}`).toBe(401);
          expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"');
          expect(await refused.json()).toMatchObject({ message: expect.any(String) });
        }
        const lacking = await call(method, path, need === 'write' ? readerToken : subscriberToken, body);
        expect(lacking.status, `${method} ${path}`).toBe(403);
        expect(lacking.headers.get('www-authenticate')).toContain(`scope="admin:${need}"`);
      }
      expect(await query(app.databaseUrl, 'SELECT count(*) FROM audit_events')).toEqual(eventsBefore);
      expect(await query(app.databaseUrl, "SELECT 1 FROM portal_users WHERE username = 'mallory'")).toEqual([]);
    });
  });
});
