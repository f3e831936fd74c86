import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { DEVICE_GRANT } from '../../factories/device-flow.factory.js';
import { createClient, createPublicClient, createUser } from '../../factories/oauth.factory.js';
import {
  authorizationCode,
  basicAuth,
  exchangeCode,
  type FormResponse,
  introspect,
  LOOPBACK_PATTERN,
  LOOPBACK_REDIRECT,
  pkcePair,
  type PortalUser,
  postForm,
  type TokenResponse,
} from '../../factories/token-flow.factory.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/** RFC 6749 §5.2 error body, never cached. */
function expectOAuthError(response: FormResponse, status: number, error: string, description?: RegExp) {
  expect({ status: response.status, body: response.body }).toEqual({ status, body: { error, error_description: expect.any(String) } });
  expect(response.headers.get('cache-control')).toBe('no-store');
  if (description) expect(response.body.error_description).toMatch(description);
}

function expectTokens(response: FormResponse): TokenResponse {
  expect({ status: response.status, body: response.body }).toMatchObject({ status: 200, body: { access_token: expect.any(String), refresh_token: expect.any(String) } });
  return response.body as unknown as TokenResponse;
}

/** A public client's requests: its client_id in the body, never a secret. */
const asPublic = (id: string, params: Record<string, string>) => ({ ...params, client_id: id });

/** Every table's row count, to show a refused request stored nothing. */
async function rowCounts(app: TestApp): Promise<Record<string, number>> {
  const tables = await query<{ name: string }>(app.databaseUrl, `SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`);
  const counts: Record<string, number> = {};
  for (const { name } of tables) counts[name] = Number((await query<{ n: string }>(app.databaseUrl, `SELECT count(*) AS n FROM "${name}"`))[0].n);
  return counts;
}

describe('public clients (token_endpoint_auth_method none)', () => {
  let app: TestApp;
  let user: PortalUser;
  let client: { id: string };
  /** authorizationCode() takes a TestClient; only its id is sent. */
  const asTestClient = (id: string) => ({ id, secret: '' });
  const code = (id: string, codeChallenge?: string) => authorizationCode(app, asTestClient(id), user, { redirectUrl: LOOPBACK_REDIRECT, codeChallenge });
  const token = (params: Record<string, string>, headers: Record<string, string> = {}) => postForm(app, '/sso/token', params, headers);

  beforeAll(async () => {
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0', HOUSEKEEPING_INTERVAL: '86400' });
    user = await createUser(app);
    client = await createPublicClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
  });
  afterAll(() => app?.close());

  describe('at /sso/token', () => {
    it('exchanges a code by client_id alone with a matching PKCE verifier, and its refresh tokens rotate', async () => {
      const pkce = pkcePair();
      const first = expectTokens(await token(asPublic(client.id, { grant_type: 'authorization_code', code: await code(client.id, pkce.challenge), code_verifier: pkce.verifier })));

      const second = expectTokens(await token(asPublic(client.id, { grant_type: 'refresh_token', refresh_token: first.refresh_token })));
      expect(second.refresh_token).not.toBe(first.refresh_token);
      // The retired one coming back is theft (RFC 9700 §4.14.2): refused, and the whole grant with it.
      expectOAuthError(await token(asPublic(client.id, { grant_type: 'refresh_token', refresh_token: first.refresh_token })), 400, 'invalid_grant');
      expectOAuthError(await token(asPublic(client.id, { grant_type: 'refresh_token', refresh_token: second.refresh_token })), 400, 'invalid_grant');
    });

    it("refuses a public client's code without code_verifier with invalid_grant, and spends it", async () => {
      const pkce = pkcePair();
      const issued = await code(client.id, pkce.challenge);
      expectOAuthError(await token(asPublic(client.id, { grant_type: 'authorization_code', code: issued })), 400, 'invalid_grant', /code_verifier is required/);
      expectOAuthError(await token(asPublic(client.id, { grant_type: 'authorization_code', code: issued, code_verifier: pkce.verifier })), 400, 'invalid_grant');
    });

    it("refuses a public client's code that was requested without a code_challenge, with a verifier or without", async () => {
      // Such a code cannot be had through the helper any more: made by a confidential client that then turns public in the database.
      const turned = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
      const codes = [await code(turned.id), await code(turned.id)];
      await query(app.databaseUrl, `UPDATE clients SET token_endpoint_auth_method = 'none', secret_hash = NULL WHERE id = $1`, [turned.id]);
      await query(app.databaseUrl, 'SELECT pg_notify($1, $2)', ['vc_client_changed', turned.id]);
      await expect.poll(async () => (await app.get(ClientsService).find(turned.id))?.tokenEndpointAuthMethod).toBe('none');

      expectOAuthError(await token(asPublic(turned.id, { grant_type: 'authorization_code', code: codes[0] })), 400, 'invalid_grant', /must use PKCE/);
      expectOAuthError(await token(asPublic(turned.id, { grant_type: 'authorization_code', code: codes[1], code_verifier: pkcePair().verifier })), 400, 'invalid_grant');
    });

    it("refuses a client_secret or Basic credentials sent by a public client with 401 invalid_client, leaving its code usable; a confidential client's client_id alone is still refused", async () => {
      const pkce = pkcePair();
      const issued = await code(client.id, pkce.challenge);
      const params = { grant_type: 'authorization_code', code: issued, code_verifier: pkce.verifier };
      const inBody = await token({ ...asPublic(client.id, params), client_secret: 'anything' });
      expectOAuthError(inBody, 401, 'invalid_client', /public client sends no client secret/);
      expect(inBody.headers.get('www-authenticate')).toBeNull();
      const basic = await token(params, { authorization: basicAuth(client.id, 'anything') });
      expectOAuthError(basic, 401, 'invalid_client', /public client sends no client secret/);
      expect(basic.headers.get('www-authenticate')).toMatch(/^Basic /);
      expectTokens(await token(asPublic(client.id, params)));

      const confidential = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
      const confidentialCode = await code(confidential.id);
      expectOAuthError(await token(asPublic(confidential.id, { grant_type: 'authorization_code', code: confidentialCode })), 401, 'invalid_client', /client authentication is required/);
      expectTokens(await exchangeCode(app, confidential, confidentialCode));
    });

    it('refuses a disabled public client with 401 invalid_client, for codes and refresh tokens it already holds', async () => {
      const disabled = await createPublicClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
      const pkce = pkcePair();
      const tokens = expectTokens(await token(asPublic(disabled.id, { grant_type: 'authorization_code', code: await code(disabled.id, pkce.challenge), code_verifier: pkce.verifier })));
      const issued = await code(disabled.id, pkce.challenge);
      await app.get(ClientsService).setEnabled(disabled.id, false);
      expectOAuthError(await token(asPublic(disabled.id, { grant_type: 'authorization_code', code: issued, code_verifier: pkce.verifier })), 401, 'invalid_client');
      expectOAuthError(await token(asPublic(disabled.id, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token })), 401, 'invalid_client');
    });
  });

  describe('the helper config', () => {
    const config = (id: string, query: Record<string, string>) => postForm(app, `/external/oauth2helper/config/${id}?${new URLSearchParams(query)}`, '');

    it('refuses a public client without a code_challenge with 400 invalid_request, storing nothing', async () => {
      const before = await rowCounts(app);
      for (const query of [{}, { redirect_url: LOOPBACK_REDIRECT }] as Record<string, string>[]) {
        expectOAuthError(await config(client.id, query), 400, 'invalid_request', /public client must send a code_challenge/);
      }
      expect(await rowCounts(app)).toEqual(before);
      const accepted = await config(client.id, { redirect_url: LOOPBACK_REDIRECT, code_challenge: pkcePair().challenge, code_challenge_method: 'S256' });
      expect(accepted.status).toBe(200);
    });
  });

  describe('at the other endpoints', () => {
    it('refuses a public client at /sso/introspect with 401 invalid_client (RFC 7662 §2.1)', async () => {
      const pkce = pkcePair();
      const tokens = expectTokens(await token(asPublic(client.id, { grant_type: 'authorization_code', code: await code(client.id, pkce.challenge), code_verifier: pkce.verifier })));
      expectOAuthError(await postForm(app, '/sso/introspect', asPublic(client.id, { token: tokens.access_token })), 401, 'invalid_client', /public client/);
      expectOAuthError(await postForm(app, '/sso/introspect', { ...asPublic(client.id, { token: tokens.access_token }), client_secret: 'x' }), 401, 'invalid_client');
    });

    it('revokes its own tokens at /sso/revoke by client_id alone (RFC 7009 §2.1)', async () => {
      const pkce = pkcePair();
      const tokens = expectTokens(await token(asPublic(client.id, { grant_type: 'authorization_code', code: await code(client.id, pkce.challenge), code_verifier: pkce.verifier })));
      const revoked = await postForm(app, '/sso/revoke', asPublic(client.id, { token: tokens.refresh_token }));
      expect({ status: revoked.status, text: revoked.text }).toEqual({ status: 200, text: '' });
      expectOAuthError(await token(asPublic(client.id, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token })), 400, 'invalid_grant');
      // A confidential client may still look at it: another client's token is inactive to it, as always.
      const confidential = await createClient(app);
      expect((await introspect(app, confidential, tokens.access_token)).body).toEqual({ active: false });
    });

    it('starts a device authorization and polls it by client_id alone (RFC 8628 §3.1)', async () => {
      const device = await createPublicClient(app, { grants: [DEVICE_GRANT, 'refresh_token'] });
      const started = await postForm<{ device_code: string }>(app, '/sso/device_authorization', { client_id: device.id });
      expect(started.status).toBe(200);
      expectOAuthError(await token(asPublic(device.id, { grant_type: DEVICE_GRANT, device_code: started.body.device_code })), 400, 'authorization_pending');
    });
  });
});
