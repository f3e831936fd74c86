import { randomUUID } from 'node:crypto';
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { SignOutsRepository } from '../../../src/grants/sign-outs.repository.js';
import { clientToken } from '../../factories/notification.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { signWithServiceKey } from '../../factories/state.factory.js';
import { exchangeCode, issueTokens, LOOPBACK_PATTERN, LOOPBACK_REDIRECT, type PortalUser, revoke, userId } from '../../factories/token-flow.factory.js';
import { createSignInClient, newKek, registerProvider, throughForgingProvider } from '../../factories/upstream.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { type ForgingProvider, startForgingProvider } from '../../setup/upstream/forging-provider.js';

// GET and POST /sso/userinfo (OpenID Connect Core §5.3, RFC 6750): the user's claims per scope for
// a user's access token with `openid`, the token in the header or (POST) the form body; every
// refusal in the OAuth error format with its RFC 6750 §3 challenge. The tokens come from the
// helper flow's code exchange, which grants the scope the token request names.

const REALM = 'Bearer realm="voyage-connect"';
const OIDC_SCOPES = ['openid', 'profile', 'email'];

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

const answer = async (response: Response): Promise<Answer> => ({ status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> });

function userinfoGet(app: TestApp, token?: string): Promise<Answer> {
  return fetch(`${app.baseUrl}/sso/userinfo`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } }).then(answer);
}

function userinfoPost(app: TestApp, options: { header?: string; form?: Record<string, string>; body?: string; contentType?: string }): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.header !== undefined) headers.authorization = `Bearer ${options.header}`;
  if (options.form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
  if (options.contentType !== undefined) headers['content-type'] = options.contentType;
  const body = options.form !== undefined ? new URLSearchParams(options.form).toString() : options.body;
  return fetch(`${app.baseUrl}/sso/userinfo`, { method: 'POST', headers, body }).then(answer);
}

/** A refusal: the status, the OAuth error body, never cached, and the challenge. */
function expectRefusal(refused: Answer, status: number, error: string, challenge: string | RegExp) {
  expect(refused.status).toBe(status);
  expect(refused.body).toEqual({ error, error_description: expect.any(String) });
  expect(refused.headers.get('cache-control')).toBe('no-store');
  if (typeof challenge === 'string') expect(refused.headers.get('www-authenticate')).toBe(challenge);
  else expect(refused.headers.get('www-authenticate')).toMatch(challenge);
}

const INVALID_TOKEN = /^Bearer realm="voyage-connect", error="invalid_token", error_description="[^"]+"$/;
const INSUFFICIENT_SCOPE = `${REALM}, error="insufficient_scope", scope="openid"`;

describe('/sso/userinfo', () => {
  let app: TestApp;
  let client: TestClient;

  /** A user of its own and a token with `scope` (null: none asked) from the helper flow's code exchange. */
  async function signedIn(scope: string | null = OIDC_SCOPES.join(' ')) {
    const user = await createUser(app);
    const tokens = await issueTokens(app, client, user, { redirectUrl: LOOPBACK_REDIRECT, ...(scope === null ? {} : { scope }) });
    return { user, id: await userId(app, user), ...tokens };
  }

  const createdAt = async (user: PortalUser) =>
    (await query<{ seconds: number }>(app.databaseUrl, 'SELECT floor(extract(epoch FROM created_at))::int AS seconds FROM portal_users WHERE username = $1', [user.username]))[0].seconds;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek() });
    client = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN], scopes: [...OIDC_SCOPES, 'voyage:read'] });
  });
  afterAll(() => app?.close());

  describe('answers the claims the scopes allow', () => {
    it('GET with the token in the Authorization header: sub, and for a local user the username as name and preferred_username', async () => {
      const { user, id, access_token } = await signedIn();
      const got = await userinfoGet(app, access_token);
      expect(got.status).toBe(200);
      expect(got.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(got.headers.get('cache-control')).toBe('no-store');
      // A local user has no e-mail address: the email scope adds nothing.
      expect(got.body).toEqual({ sub: id, name: user.username, preferred_username: user.username, updated_at: await createdAt(user) });
      expect(got.body.sub).toBe(decodeJwt(access_token).sub);
    });

    it('POST with the token in the Authorization header', async () => {
      const { user, id, access_token } = await signedIn();
      const got = await userinfoPost(app, { header: access_token });
      expect(got.status).toBe(200);
      expect(got.headers.get('cache-control')).toBe('no-store');
      expect(got.body).toEqual({ sub: id, name: user.username, preferred_username: user.username, updated_at: await createdAt(user) });
    });

    it('POST with the token in the form body (RFC 6750 §2.2)', async () => {
      const { user, id, access_token } = await signedIn();
      const got = await userinfoPost(app, { form: { access_token, unknown: 'ignored' } });
      expect(got.status).toBe(200);
      expect(got.body).toEqual({ sub: id, name: user.username, preferred_username: user.username, updated_at: await createdAt(user) });
    });

    it('only sub for scope openid alone, whatever else the scope has', async () => {
      const { id, access_token } = await signedIn('voyage:read openid');
      expect(await userinfoGet(app, access_token)).toMatchObject({ status: 200, body: { sub: id } });
      expect(Object.keys((await userinfoGet(app, access_token)).body)).toEqual(['sub']);
    });

    it('the standard scopes stay with every client: its own scopes changing takes none of the claims away', async () => {
      const own = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN], scopes: ['fleet:read'] });
      const user = await createUser(app);
      const { access_token } = await issueTokens(app, own, user, { redirectUrl: LOOPBACK_REDIRECT, scope: 'openid profile' });
      expect(Object.keys((await userinfoGet(app, access_token)).body)).toContain('preferred_username');
      await app.get(ClientsService).update(own.id, { scopes: [] });
      expect(Object.keys((await userinfoGet(app, access_token)).body)).toContain('preferred_username');
    });

    it('to openid-client 6 after OpenID Connect discovery (fetchUserInfo checks sub)', async () => {
      const { user, id, access_token } = await signedIn();
      const config = await oidc.discovery(new URL(app.env.identityUrl), client.id, undefined, oidc.ClientSecretBasic(client.secret), { execute: [oidc.allowInsecureRequests] });
      const claims = await oidc.fetchUserInfo(config, access_token, id);
      expect(claims).toMatchObject({ sub: id, preferred_username: user.username });
      await expect(oidc.fetchUserInfo(config, access_token, randomUUID())).rejects.toMatchObject({ code: 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED' });
    });
  });

  describe('a user signed in through an identity provider', () => {
    let forge: ForgingProvider;
    let signInClient: TestClient;
    const PROFILE = { preferred_username: 'alice', name: 'Alice Liddell', email: 'alice@example.test', email_verified: true };

    beforeAll(async () => {
      forge = await startForgingProvider();
      // Trusted for email_verified, so its own value shows (upstream-oidc.test.ts has the untrusted default).
      await registerProvider(app, forge, 'forge', 'Forge', 'broker', { trustEmail: true });
      signInClient = await createSignInClient(app, ['forge'], { redirectPatterns: [LOOPBACK_PATTERN], scopes: OIDC_SCOPES });
    });
    afterAll(() => forge?.close());

    /** A sign-in through the provider answering `claims`, and the token of scope `scope`. */
    async function throughProvider(claims: Record<string, unknown>, scope = OIDC_SCOPES.join(' ')): Promise<string> {
      forge.set({ sub: 'alice-sub', claims });
      const { authorize_url } = await issueState(app, signInClient.id, { redirect_url: LOOPBACK_REDIRECT });
      const back = await throughForgingProvider(authorize_url, { confirm: true });
      expect(back.status).toBe(302);
      const code = new URL(back.headers.get('location')!).searchParams.get('code')!;
      const exchanged = await exchangeCode(app, signInClient, code, { scope });
      expect(exchanged.status).toBe(200);
      return String(exchanged.body.access_token);
    }

    const profileUpdatedAt = async () =>
      (await query<{ seconds: number }>(app.databaseUrl, `SELECT floor(extract(epoch FROM profile_updated_at))::int AS seconds FROM portal_users WHERE upstream_subject = 'alice-sub'`))[0].seconds;

    it("answers the provider's profile claims; updated_at moves only when a sign-in brought a different profile", async () => {
      const token = await throughProvider(PROFILE);
      const sub = decodeJwt(token).sub;
      const first = await userinfoGet(app, token);
      expect(first.body).toEqual({ sub, ...PROFILE, updated_at: await profileUpdatedAt() });

      // The same profile again, a day after the last change: updated_at stays.
      await query(app.databaseUrl, `UPDATE portal_users SET profile_updated_at = now() - interval '1 day' WHERE upstream_subject = 'alice-sub'`);
      const dayAgo = await profileUpdatedAt();
      const same = await userinfoGet(app, await throughProvider(PROFILE));
      expect(same.body).toEqual({ sub, ...PROFILE, updated_at: dayAgo });

      // Another name and an unverified address: updated_at is now.
      const changed = await userinfoGet(app, await throughProvider({ ...PROFILE, name: 'Alice L.', email_verified: false }));
      expect(changed.body).toEqual({ sub, ...PROFILE, name: 'Alice L.', email_verified: false, updated_at: expect.any(Number) });
      expect(Math.abs((changed.body.updated_at as number) - Date.now() / 1000)).toBeLessThan(60);
    });

    it('leaves out what the provider did not give, and tells an address without email_verified as unverified', async () => {
      const token = await throughProvider({ email: 'alice@example.test' });
      expect((await userinfoGet(app, token)).body).toEqual({ sub: decodeJwt(token).sub, email: 'alice@example.test', email_verified: false, updated_at: await profileUpdatedAt() });
      const emailOnly = await throughProvider({ email: 'alice@example.test' }, 'openid email');
      expect((await userinfoGet(app, emailOnly)).body).toEqual({ sub: decodeJwt(token).sub, email: 'alice@example.test', email_verified: false });
    });
  });

  describe('refusals', () => {
    it('no token: 401 with the bare challenge (RFC 6750 §3.1), on GET and POST', async () => {
      expectRefusal(await userinfoGet(app), 401, 'invalid_token', REALM);
      expectRefusal(await userinfoPost(app, {}), 401, 'invalid_token', REALM);
      expectRefusal(await userinfoPost(app, { form: { other: 'x' } }), 401, 'invalid_token', REALM);
    });

    it('a malformed, forged or expired token, or another scheme: 401 invalid_token', async () => {
      const { access_token } = await signedIn();
      expectRefusal(await userinfoGet(app, 'not-a-token'), 401, 'invalid_token', INVALID_TOKEN);
      expectRefusal(await userinfoGet(app, `${access_token.slice(0, -4)}AAAA`), 401, 'invalid_token', INVALID_TOKEN);
      expectRefusal(await userinfoPost(app, { form: { access_token: 'not a token at all' } }), 401, 'invalid_token', INVALID_TOKEN);
      const basic = await fetch(`${app.baseUrl}/sso/userinfo`, { headers: { authorization: 'Basic dXNlcjpwYXNz' } }).then(answer);
      expectRefusal(basic, 401, 'invalid_token', INVALID_TOKEN);
      const now = Math.floor(Date.now() / 1000);
      const expired = await signWithServiceKey(app, { ...decodeJwt(access_token), iat: now - 7200, exp: now - 3600, jti: randomUUID() }, { typ: 'at+jwt' });
      expectRefusal(await userinfoGet(app, expired), 401, 'invalid_token', INVALID_TOKEN);
    });

    it('a token revoked at /sso/revoke, or of a grant revoked by grants:revoke: 401 invalid_token', async () => {
      const revoked = await signedIn();
      expect((await revoke(app, client, revoked.access_token)).status).toBe(200);
      expectRefusal(await userinfoGet(app, revoked.access_token), 401, 'invalid_token', INVALID_TOKEN);

      const signedOut = await signedIn();
      expect((await userinfoGet(app, signedOut.access_token)).status).toBe(200);
      expect(await app.get(SignOutsRepository).signOutNow({ userId: signedOut.id })).toBe(1);
      await expect.poll(async () => (await userinfoGet(app, signedOut.access_token)).status).toBe(401);
      expectRefusal(await userinfoPost(app, { form: { access_token: signedOut.access_token } }), 401, 'invalid_token', INVALID_TOKEN);
    });

    it('a token of a disabled user: 401 invalid_token, even before the sign-out reaches its grant', async () => {
      const { id, access_token } = await signedIn();
      // Only the user's row: the user:disable command also revokes the grants, which alone would refuse the token.
      await query(app.databaseUrl, 'UPDATE portal_users SET disabled_at = now() WHERE id = $1', [id]);
      expectRefusal(await userinfoGet(app, access_token), 401, 'invalid_token', INVALID_TOKEN);
    });

    it('a token without openid in its scope: 403 insufficient_scope', async () => {
      const noScope = await signedIn(null);
      expect(noScope.scope).toBeNull();
      expectRefusal(await userinfoGet(app, noScope.access_token), 403, 'insufficient_scope', INSUFFICIENT_SCOPE);
      const profileOnly = await signedIn('profile email');
      expectRefusal(await userinfoGet(app, profileOnly.access_token), 403, 'insufficient_scope', INSUFFICIENT_SCOPE);
      expectRefusal(await userinfoPost(app, { form: { access_token: profileOnly.access_token } }), 403, 'insufficient_scope', INSUFFICIENT_SCOPE);
    });

    it('a client credentials token, even with scope openid: 403 insufficient_scope (it has no user)', async () => {
      const machine = await createClient(app, { grants: ['client_credentials'], scopes: ['openid'] });
      const token = await clientToken(app, machine, 'openid');
      expect(decodeJwt(token).scope).toBe('openid');
      expectRefusal(await userinfoGet(app, token), 403, 'insufficient_scope', INSUFFICIENT_SCOPE);
    });

    it('the token both in the header and in the body, or a repeated access_token: 400 invalid_request', async () => {
      const { access_token } = await signedIn();
      expectRefusal(await userinfoPost(app, { header: access_token, form: { access_token } }), 400, 'invalid_request', /^Bearer realm="voyage-connect", error="invalid_request", error_description="[^"]+"$/);
      const repeated = await userinfoPost(app, { body: `access_token=${access_token}&access_token=${access_token}`, contentType: 'application/x-www-form-urlencoded' });
      expect(repeated.status).toBe(400);
      expect(repeated.body).toEqual({ error: 'invalid_request', error_description: 'parameter access_token is repeated' });
    });

    it('a body that is not a form: 415 invalid_request', async () => {
      const { access_token } = await signedIn();
      const json = await userinfoPost(app, { header: access_token, body: JSON.stringify({ access_token }), contentType: 'application/json' });
      expect(json.status).toBe(415);
      expect(json.body).toEqual({ error: 'invalid_request', error_description: 'unsupported content type: send application/x-www-form-urlencoded' });
    });
  });
});
