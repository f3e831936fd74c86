import { createServer, type Server } from 'node:http';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { clientToken, SUBSCRIBE_SCOPE } from '../../factories/notification.factory.js';
import { authorizationCode, exchangeCode, refresh } from '../../factories/token-flow.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { query } from '../../setup/database.js';
import { freePort } from '../../setup/free-port.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// Dynamic client registration (RFC 7591) and its management (RFC 7592) from outside: a portal's
// backend with a clients:register token registers clients with a library nobody here wrote
// (openid-client 6's dynamicClientRegistration), and they sign users in as any client would.

const REGISTER_SCOPE = 'clients:register';

async function startCallback() {
  const port = await freePort();
  const server: Server = createServer((_request, response) => response.end('signed in'));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${port}/callback`, close: () => new Promise((resolve) => server.close(resolve)) };
}

describe('client registration (RFC 7591) and management (RFC 7592)', () => {
  let app: TestApp;
  let registrar: TestClient;
  let token: string;

  /** POST /sso/register with this test's registrar's token, another token, or none (null). */
  const register = (body: unknown, bearer: string | null = token) =>
    fetch(`${app.baseUrl}/sso/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(bearer === null ? {} : { authorization: `Bearer ${bearer}` }) },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const manage = (uri: string, method: string, bearer?: string, body?: unknown) =>
    fetch(uri, {
      method,
      headers: { ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  /** How many clients were ever registered from software. */
  const clientCount = async () => Number((await query<{ count: string }>(app.databaseUrl, 'SELECT count(*) FROM clients WHERE registered_by IS NOT NULL'))[0].count);

  beforeAll(async () => {
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0', REGISTRATION_RATE_LIMIT: '5' });
  });
  // Each test registers as a registrar of its own: REGISTRATION_RATE_LIMIT counts per caller.
  beforeEach(async () => {
    registrar = await createClient(app, { grants: ['client_credentials'], scopes: [REGISTER_SCOPE] });
    token = await clientToken(app, registrar, REGISTER_SCOPE);
  });
  afterAll(async () => {
    await app?.close();
  });

  it('names the registration endpoint in both discovery documents', async () => {
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      const document = (await (await fetch(`${app.baseUrl}${path}`)).json()) as Record<string, unknown>;
      expect(document.registration_endpoint).toBe(`${app.env.identityUrl}/sso/register`);
    }
  });

  it('registers a confidential client: 201 with its metadata, its secret once, and how to manage it; the secret works', async () => {
    const response = await register({ client_name: 'Bridge tablet', grant_types: ['client_credentials'], scope: SUBSCRIBE_SCOPE });
    expect(response.status).toBe(201);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      client_name: 'Bridge tablet',
      grant_types: ['client_credentials'],
      response_types: [],
      scope: SUBSCRIBE_SCOPE,
      token_endpoint_auth_method: 'client_secret_basic',
      client_secret_expires_at: 0,
      registration_client_uri: `${app.env.identityUrl}/sso/register/${body.client_id}`,
    });
    expect(body.client_id_issued_at).toBeGreaterThan(Date.now() / 1000 - 60);
    expect(body.client_secret).toMatch(/^[\w-]{43}$/);
    expect(body.registration_access_token).toMatch(/^[\w-]{43}$/);
    // The secret is stored hashed, and so is the registration access token.
    const [row] = await query<{ secret_hash: Buffer; registration_token_hash: Buffer; registered_by: string }>(
      app.databaseUrl,
      'SELECT secret_hash, registration_token_hash, registered_by FROM clients WHERE id = $1',
      [body.client_id],
    );
    expect(row.secret_hash.toString('utf8')).not.toContain(body.client_secret as string);
    expect(row.registration_token_hash.length).toBe(32);
    expect(row.registered_by).toBe(registrar.id);
    expect(await clientToken(app, { id: body.client_id as string, secret: body.client_secret as string }, SUBSCRIBE_SCOPE)).toBeTruthy();
  });

  it('refuses a scope outside REGISTRATION_SCOPES and a bad redirect, in RFC 7591 §3.2.2 terms, creating nothing', async () => {
    const before = await clientCount();
    const scope = await register({ client_name: 'Greedy', grant_types: ['client_credentials'], scope: 'notification:publish' });
    expect(scope.status).toBe(400);
    expect(await scope.json()).toMatchObject({ error: 'invalid_client_metadata', error_description: expect.stringContaining('notification:publish') });
    for (const [field, value] of [
      ['redirect_uris', ['http://192.168.0.0/16:*/callback']],
      ['redirect_uris', ['https://user@example.com/cb']],
      ['redirect_uris', ['javascript:alert(1)']],
      ['voyage_redirect_patterns', ['http://8.8.0.0/16:*/callback']],
      ['redirect_uris', 'https://app.example.com/cb'],
    ] as const) {
      const refused = await register({ client_name: `Bad redirect ${field}`, [field]: value });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ error: 'invalid_redirect_uri', error_description: expect.stringContaining(field) });
    }
    const unknownGrant = await register({ client_name: 'Implicit', grant_types: ['implicit'] });
    expect(await unknownGrant.json()).toMatchObject({ error: 'invalid_client_metadata' });
    const publicCc = await register({ client_name: 'Public machine', grant_types: ['client_credentials'], token_endpoint_auth_method: 'none' });
    expect(await publicCc.json()).toMatchObject({ error: 'invalid_client_metadata', error_description: expect.stringContaining('public client') });
    expect(await clientCount()).toBe(before);
  });

  it('refuses a name already taken with invalid_client_metadata', async () => {
    expect((await register({ client_name: 'Taken name' })).status).toBe(201);
    const again = await register({ client_name: 'Taken name' });
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: 'invalid_client_metadata', error_description: expect.stringContaining('already exists') });
  });

  it('answers a body over 64 KiB with 413, malformed JSON with 400 and another media type with 415, in the OAuth format', async () => {
    const large = await register({ client_name: 'Large', redirect_uris: Array.from({ length: 3000 }, (_, index) => `https://app.example.com/cb/${index}`) });
    expect(large.status).toBe(413);
    expect(await large.json()).toMatchObject({ error: 'invalid_request' });
    const malformed = await register('{"client_name":');
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: 'invalid_request' });
    const text = await fetch(`${app.baseUrl}/sso/register`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/xml' }, body: '<client_name/>' });
    expect(text.status).toBe(415);
    expect(await text.json()).toEqual({ error: 'invalid_request', error_description: 'unsupported content type: send application/json' });
  });

  describe('who may register', () => {
    it('refuses no token, a forged one, one without clients:register and one of a disabled client, with RFC 6750 challenges', async () => {
      const before = await clientCount();
      const none = await register({ client_name: 'No token' }, null);
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toBe('Bearer realm="voyage-connect"');
      expect(await none.json()).toMatchObject({ error: 'invalid_token' });

      const [header, payload] = token.split('.');
      const forged = await register({ client_name: 'Forged' }, `${header}.${payload}.${Buffer.from('forged').toString('base64url')}`);
      expect(forged.status).toBe(401);
      expect(forged.headers.get('www-authenticate')).toContain('error="invalid_token"');

      const subscriber = await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
      const lacking = await register({ client_name: 'Lacking' }, await clientToken(app, subscriber, SUBSCRIBE_SCOPE));
      expect(lacking.status).toBe(403);
      expect(lacking.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
      expect(await lacking.json()).toMatchObject({ error: 'insufficient_scope' });

      const disabledRegistrar = await createClient(app, { grants: ['client_credentials'], scopes: [REGISTER_SCOPE] });
      const disabledToken = await clientToken(app, disabledRegistrar, REGISTER_SCOPE);
      const { ClientsService } = await import('../../../src/clients/clients.service.js');
      await app.get(ClientsService).setEnabled(disabledRegistrar.id, false);
      const disabled = await register({ client_name: 'Disabled registrar' }, disabledToken);
      expect(disabled.status).toBe(401);
      expect(await clientCount()).toBe(before);
    });

    it('slows a burst from one client down: 429 with Retry-After after REGISTRATION_RATE_LIMIT in a minute, nothing stored', async () => {
      const bursty = await createClient(app, { grants: ['client_credentials'], scopes: [REGISTER_SCOPE] });
      const bearer = await clientToken(app, bursty, REGISTER_SCOPE);
      for (let index = 0; index < 5; index++) expect((await register({ client_name: `Burst ${index}` }, bearer)).status).toBe(201);
      const before = await clientCount();
      const refused = await register({ client_name: 'Burst 5' }, bearer);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      expect(await refused.json()).toMatchObject({ error: 'slow_down' });
      expect(await clientCount()).toBe(before);
      // Another caller is not slowed by this one's burst.
      expect((await register({ client_name: 'Not bursty' })).status).toBe(201);
    });
  });

  describe('management with the registration access token (RFC 7592)', () => {
    it('reads, replaces and deletes a registration; the token works for its own client only', async () => {
      const created = (await (await register({ client_name: 'Managed', redirect_uris: ['https://app.example.com/cb'], scope: SUBSCRIBE_SCOPE })).json()) as Record<string, string>;
      const other = (await (await register({ client_name: 'Other managed' })).json()) as Record<string, string>;
      const uri = created.registration_client_uri;
      const rat = created.registration_access_token;

      const read = await manage(uri, 'GET', rat);
      expect(read.status).toBe(200);
      const metadata = (await read.json()) as Record<string, unknown>;
      expect(metadata).toMatchObject({ client_id: created.client_id, client_name: 'Managed', redirect_uris: ['https://app.example.com/cb'], registration_access_token: rat });
      expect(metadata).not.toHaveProperty('client_secret');

      for (const refused of [await manage(uri, 'GET'), await manage(uri, 'GET', other.registration_access_token), await manage(uri, 'GET', token), await manage(other.registration_client_uri, 'DELETE', rat)]) {
        expect(refused.status).toBe(401);
        expect(await refused.json()).toMatchObject({ error: 'invalid_token' });
      }
      // The registration access token is no access token: the notification routes refuse it.
      const history = await fetch(`${app.baseUrl}/voyage/notification/v1/notifications?after=0`, { headers: { authorization: `Bearer ${rat}` } });
      expect(history.status).toBe(401);

      const wrongId = await manage(uri, 'PUT', rat, { ...metadata, client_id: other.client_id });
      expect(wrongId.status).toBe(400);
      expect(await wrongId.json()).toMatchObject({ error: 'invalid_client_metadata' });
      const wrongSecret = await manage(uri, 'PUT', rat, { ...metadata, client_secret: 'not-the-secret' });
      expect(wrongSecret.status).toBe(400);

      const replaced = await manage(uri, 'PUT', rat, { client_id: created.client_id, client_secret: created.client_secret, client_name: 'Managed, renamed', redirect_uris: ['https://app.example.com/other'], token_endpoint_auth_method: 'client_secret_post' });
      expect(replaced.status).toBe(200);
      const after = (await replaced.json()) as Record<string, unknown>;
      expect(after).toMatchObject({ client_name: 'Managed, renamed', redirect_uris: ['https://app.example.com/other'], token_endpoint_auth_method: 'client_secret_post' });
      // Left out, the scope went back to its default: none for a client of the authorization code.
      expect(after).not.toHaveProperty('scope');
      expect(after).not.toHaveProperty('client_secret');

      const deleted = await manage(uri, 'DELETE', rat);
      expect(deleted.status).toBe(204);
      expect((await manage(uri, 'GET', rat)).status).toBe(401);
      const [row] = await query<{ deleted_at: Date | null; registration_token_hash: Buffer | null }>(app.databaseUrl, 'SELECT deleted_at, registration_token_hash FROM clients WHERE id = $1', [created.client_id]);
      expect(row.deleted_at).not.toBeNull();
      expect(row.registration_token_hash).toBeNull();
    });

    it('records each change in the audit trail as the caller\'s, and logs it as a security event, never a secret', async () => {
      const created = (await (await register({ client_name: 'Audited' })).json()) as Record<string, string>;
      await manage(created.registration_client_uri, 'DELETE', created.registration_access_token);
      const rows = await query<{ actor_kind: string; actor: string; action: string; client_id: string }>(
        app.databaseUrl,
        'SELECT actor_kind, actor, action, client_id FROM audit_events WHERE client_id = $1 ORDER BY id',
        [created.client_id],
      );
      expect(rows).toEqual([
        { actor_kind: 'client', actor: registrar.id, action: 'client.registered', client_id: created.client_id },
        { actor_kind: 'client', actor: created.client_id, action: 'client.deleted', client_id: created.client_id },
      ]);
      const events = app.logs.filter((line) => line.subjectClientId === created.client_id);
      expect(events.map((line) => line.event)).toEqual(['client.registered', 'admin.client.deleted']);
      expect(events[0]).toMatchObject({ clientId: registrar.id, address: '127.0.0.1' });
      const logText = JSON.stringify(app.logs);
      expect(logText).not.toContain(created.client_secret);
      expect(logText).not.toContain(created.registration_access_token);
    });
  });

  describe('registered clients sign users in', () => {
    let browser: Browser;
    let callback: Awaited<ReturnType<typeof startCallback>>;

    beforeAll(async () => {
      browser = await launchChromium();
      callback = await startCallback();
    });
    afterAll(async () => {
      await browser?.close();
      await callback?.close();
    });

    it('registers with openid-client 6 and signs in through Chromium with the standard authorization request', async () => {
      const server = new URL(app.baseUrl);
      const config = await oidc.dynamicClientRegistration(
        server,
        { client_name: 'Registered web app', redirect_uris: [callback.url], grant_types: ['authorization_code', 'refresh_token'], id_token_signed_response_alg: 'ES256' },
        undefined,
        { initialAccessToken: token, execute: [oidc.allowInsecureRequests] },
      );
      expect(config.clientMetadata()).toMatchObject({ client_name: 'Registered web app', id_token_signed_response_alg: 'ES256', registration_access_token: expect.any(String) });
      oidc.enableNonRepudiationChecks(config);

      const user = await createUser(app);
      const page = await (await browser.newContext()).newPage();
      const verifier = oidc.randomPKCECodeVerifier();
      const [state, nonce] = [oidc.randomState(), oidc.randomNonce()];
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: callback.url,
        scope: 'openid profile offline_access',
        state,
        nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      });
      const landed = page.waitForURL(`${callback.url}?**`);
      await page.goto(url.href);
      await page.getByLabel('Username').fill(user.username);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await landed;
      const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true });
      expect(tokens.claims()).toMatchObject({ aud: config.clientMetadata().client_id, preferred_username: user.username });
      expect(tokens.refresh_token).toBeTruthy();
      await page.context().close();
    });

    it('registers a helper client with a LAN pattern, which signs a device in with a redirect to its LAN address', async () => {
      const registered = (await (
        await register({ client_name: 'Ship helper device', voyage_redirect_patterns: ['http://192.168.0.0/16:*/callback'], scope: SUBSCRIBE_SCOPE })
      ).json()) as Record<string, string>;
      expect(registered).toMatchObject({ voyage_redirect_patterns: ['http://192.168.0.0/16:*/callback'], redirect_uris: [] });
      const client = { id: registered.client_id, secret: registered.client_secret };
      const user = await createUser(app);
      const code = await authorizationCode(app, client, user, { redirectUrl: 'http://192.168.7.20:8123/callback' });
      const exchanged = await exchangeCode(app, client, code);
      expect(exchanged.status).toBe(200);
      const refreshed = await refresh(app, client, exchanged.body.refresh_token as string);
      expect(refreshed.status).toBe(200);

      // Deleted through RFC 7592: its grant stops working at once.
      expect((await manage(registered.registration_client_uri, 'DELETE', registered.registration_access_token)).status).toBe(204);
      const afterDelete = await refresh(app, client, refreshed.body.refresh_token as string);
      expect(afterDelete.status).toBe(401);
    });
  });
});
