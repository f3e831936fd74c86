import { randomBytes } from 'node:crypto';
import { importJWK, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizationRequest,
  type ConformanceRp,
  conformanceRp,
  expectCodeResponse,
  expectErrorResponse,
  expectIdToken,
  expectUserinfo,
  leftHalfHash,
  REDIRECT,
  REDIRECT_WITH_QUERY,
  redeem,
  SCOPE_CLAIMS,
  signInFresh,
  unrequestedClaims,
  userinfo,
} from '../../factories/conformance.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { postForm } from '../../factories/token-flow.factory.js';
import { createSignInClient, newKek, registerProvider, throughForgingProvider } from '../../factories/upstream.factory.js';
import { query } from '../../setup/database.js';
import { FormBrowser } from '../../setup/form-browser.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { type ForgingProvider, startForgingProvider } from '../../setup/upstream/forging-provider.js';

// The OpenID Foundation's "OpenID Connect Core: Basic Certification Profile" authorization server
// plan (oidcc-basic-certification-test-plan: response_type code, a static client,
// client_secret_basic; client_secret_post for oidcc-server-client-secret-post), one test per
// module, named after it: the single-authorization modules. Each asserts what the module's
// conditions check (see test/factories/conformance.factory.ts, where they are named); a module's
// WARNING-level conditions the service does not meet are said in a comment, not asserted.
// Two-authorization modules (prompt, max_age, id_token_hint) are in oidc-conformance-sessions,
// code reuse and refresh tokens in oidc-conformance-codes.

/** A brokered user's profile, as the identity provider gives it (a local user has no e-mail address). */
const PROFILE = { preferred_username: 'alice', name: 'Alice Liddell', email: 'alice@example.test', email_verified: true };

describe('OpenID Connect Basic OP conformance: one authorization', () => {
  let app: TestApp;
  let client: TestClient;
  let rp: ConformanceRp;
  let forge: ForgingProvider;
  /** A client whose users sign in through an identity provider: its users have an e-mail address. */
  let brokered: ConformanceRp;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek() });
    client = await createClient(app, { redirectPatterns: [REDIRECT, REDIRECT_WITH_QUERY] });
    rp = await conformanceRp(app, client);
    forge = await startForgingProvider();
    await registerProvider(app, forge, 'forge', 'Forge', 'broker', { trustEmail: true });
    brokered = await conformanceRp(app, await createSignInClient(app, ['forge'], { redirectPatterns: [REDIRECT] }));
  });
  afterAll(async () => {
    await forge?.close();
    await app?.close();
  });

  /** A user of their own signs in for a request with `changes` (a fresh browser); the code grant and its checks. */
  async function happyFlow(changes: Record<string, string | undefined> = {}, on: ConformanceRp = rp) {
    const request = await authorizationRequest(on, changes);
    const callback = await signInFresh(on, request, await createUser(app));
    expectCodeResponse(on, request, callback);
    return { request, callback, ...(await redeem(on, request, callback)) };
  }

  /** A brokered user (the provider answers PROFILE) signs in for `scope`; the tokens, checked. */
  async function brokeredFlow(scope: string) {
    forge.set({ sub: `alice-${randomBytes(4).toString('hex')}`, claims: PROFILE });
    const request = await authorizationRequest(brokered, { scope });
    const back = await throughForgingProvider(request.url, { confirm: true });
    expect(back.status).toBe(302);
    const callback = new URL(back.headers.get('location')!);
    expectCodeResponse(brokered, request, callback);
    return { request, ...(await redeem(brokered, request, callback)) };
  }

  const stored = async () =>
    (await query<{ count: number }>(app.databaseUrl, 'SELECT (SELECT count(*) FROM authorizations) + (SELECT count(*) FROM authorization_codes) + (SELECT count(*) FROM grants) AS count'))[0].count;

  it('oidcc-server: discovery and JWKS pass the suite’s checks; the code flow with client_secret_basic gives a valid ID token (at_hash, nonce, no unrequested claims) and userinfo answers', async () => {
    // CheckServerConfiguration, EnsureServerConfigurationSupportsClientSecretBasic.
    const metadata = rp.config.serverMetadata();
    for (const endpoint of ['issuer', 'authorization_endpoint', 'token_endpoint', 'userinfo_endpoint', 'jwks_uri'] as const) expect(URL.canParse(metadata[endpoint]!), endpoint).toBe(true);
    expect(metadata.token_endpoint_auth_methods_supported).toContain('client_secret_basic');
    expect(metadata.response_types_supported).toContain('code');
    // FetchServerKeys, CheckServerKeysIsValid, CheckForKeyIdInServerJWKs, CheckDistinctKeyIdValueInServerJWKs.
    const jwks = (await (await fetch(metadata.jwks_uri!)).json()) as { keys: JWK[] };
    expect(jwks.keys.length).toBeGreaterThan(0);
    for (const key of jwks.keys) {
      expect(key.kid).toEqual(expect.any(String));
      await importJWK(key, key.alg);
    }
    expect(new Set(jwks.keys.map(({ kid }) => kid)).size).toBe(jwks.keys.length);

    const { request, tokens, claims } = await happyFlow();
    expect(rp.answers.at(-1)!.sent.headers.get('authorization')).toMatch(/^Basic /);
    expect(tokens.expires_in).toEqual(expect.any(Number));
    expect(claims.at_hash).toBe(leftHalfHash(tokens.access_token));
    // EnsureIdTokenDoesNotContainName, EnsureIdTokenDoesNotContainNonRequestedClaims (warnings in the suite).
    expect(claims).not.toHaveProperty('name');
    expect(unrequestedClaims(claims, request.params.scope)).toEqual([]);
    // requestProtectedResource: the access token opens the UserInfo endpoint.
    expect((await userinfo(rp, tokens.access_token)).status).toBe(200);
  });

  it('oidcc-server: (with the redirect URI the suite’s instructions register, ?dummy1=lorem&dummy2=ipsum) the parameters come back and the code redeems with that redirect_uri', async () => {
    const request = await authorizationRequest(rp, { redirect_uri: REDIRECT_WITH_QUERY });
    const callback = await signInFresh(rp, request, await createUser(app));
    const code = expectCodeResponse(rp, request, callback);
    // openid-client takes the redirect_uri from the callback without its query: the suite sends it as registered.
    const tokens = await postForm(app, '/sso/token', { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_WITH_QUERY, code_verifier: request.verifier }, {
      authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`,
    });
    expect(tokens.status).toBe(200);
    await expectIdToken(rp, String(tokens.body.id_token), { nonce: request.nonce, accessToken: String(tokens.body.access_token) });
  });

  it('oidcc-server-client-secret-post: the happy flow with client_secret_post', async () => {
    const post = await conformanceRp(app, client, 'client_secret_post');
    expect(post.config.serverMetadata().token_endpoint_auth_methods_supported).toContain('client_secret_post');
    const { tokens, claims } = await happyFlow({}, post);
    expect(claims.aud).toBe(client.id);
    expect((await userinfo(post, tokens.access_token)).status).toBe(200);
    // The secret went in the form, as client_secret_post sends it, and no Authorization header.
    expect(post.answers[0].sent.form.get('client_secret')).toBe(client.secret);
    expect(post.answers[0].sent.headers.has('authorization')).toBe(false);
  });

  it('oidcc-response-type-missing: a request without response_type is sent back invalid_request (or unsupported_response_type) with its state, never a code', async () => {
    const before = await stored();
    const request = await authorizationRequest(rp, { response_type: undefined });
    const params = expectErrorResponse(rp, request, await fetch(request.url, { redirect: 'manual' }));
    expect(['invalid_request', 'unsupported_response_type']).toContain(params.error);
    expect(await stored()).toBe(before);
  });

  describe('the UserInfo endpoint (AbstractOIDCCUserInfoTest)', () => {
    it('oidcc-userinfo-get: GET with the access token in the Authorization header answers JSON with the ID token’s sub', async () => {
      const { tokens, claims } = await happyFlow();
      await expectUserinfo(await userinfo(rp, tokens.access_token, 'get'), claims.sub!);
    });

    it('oidcc-userinfo-post-header: POST with the access token in the Authorization header answers JSON with the ID token’s sub', async () => {
      const { tokens, claims } = await happyFlow();
      await expectUserinfo(await userinfo(rp, tokens.access_token, 'post-header'), claims.sub!);
    });

    it('oidcc-userinfo-post-body: POST with the access token in the form body (RFC 6750 §2.2) answers JSON with the ID token’s sub', async () => {
      const { tokens, claims } = await happyFlow();
      // The module accepts an error here with a warning; the service supports the body.
      await expectUserinfo(await userinfo(rp, tokens.access_token, 'post-body'), claims.sub!);
    });
  });

  it('oidcc-ensure-request-without-nonce-succeeds-for-code-flow: a request without nonce gets a code (and its ID token carries no nonce)', async () => {
    const request = await authorizationRequest(rp, { nonce: undefined });
    const callback = await signInFresh(rp, request, await createUser(app));
    expectCodeResponse(rp, request, callback);
    const { claims } = await redeem(rp, request, callback);
    expect(claims).not.toHaveProperty('nonce');
  });

  describe('scopes (AbstractOIDCCReturnedClaimsServerTest): scopes_supported, then the claims at the UserInfo endpoint', () => {
    it('oidcc-scope-profile: scopes_supported lists profile; userinfo answers the profile claims the service knows, with the ID token’s sub', async () => {
      expect(rp.config.serverMetadata().scopes_supported).toEqual(expect.arrayContaining(['openid', 'profile']));
      const { tokens, claims } = await happyFlow({ scope: 'openid profile' });
      const info = await expectUserinfo(await userinfo(rp, tokens.access_token), claims.sub!);
      expect(info).toMatchObject({ name: expect.any(String), preferred_username: expect.any(String), updated_at: expect.any(Number) });
      // VerifyScopesReturnedInUserInfoClaims (a warning) would also like given_name, family_name,
      // picture…: the service has none of them, and leaves out what it does not know (Core §5.3.2).
      expect(SCOPE_CLAIMS.profile.filter((claim) => claim in info)).toEqual(['name', 'updated_at', 'preferred_username']);
    });

    it('oidcc-scope-email: scopes_supported lists email; userinfo answers email and email_verified; the ID token has no name', async () => {
      expect(rp.config.serverMetadata().scopes_supported).toEqual(expect.arrayContaining(['openid', 'email']));
      const { tokens, claims } = await brokeredFlow('openid email');
      const info = await expectUserinfo(await userinfo(brokered, tokens.access_token), claims.sub!);
      expect(info).toMatchObject({ email: PROFILE.email, email_verified: true });
      // EnsureUserInfoDoesNotContainName, EnsureIdTokenDoesNotContainName (warnings).
      expect(info).not.toHaveProperty('name');
      expect(claims).not.toHaveProperty('name');
      // EnsureIdTokenDoesNotContainEmailForScopeEmail warns: the contract puts the scope's claims in
      // the ID token too ("the claims its scopes allow"); Core §5.4 does not forbid it.
    });

    it('oidcc-scope-all: the module skips itself, as scopes_supported lists neither address nor phone; the request succeeds and userinfo answers what profile and email allow', async () => {
      const supported = rp.config.serverMetadata().scopes_supported!;
      // OIDCCCheckScopesSupportedContainScopeTest → fireTestSkipped.
      expect(supported).not.toContain('address');
      expect(supported).not.toContain('phone');
      // What the module would check if it ran: unknown scopes are ignored (Core §3.1.2.1), the others answered.
      const { tokens, claims } = await brokeredFlow('openid email phone address profile');
      expect(tokens.scope).toBe('openid email profile');
      const info = await expectUserinfo(await userinfo(brokered, tokens.access_token), claims.sub!);
      expect(info).toMatchObject({ ...PROFILE, updated_at: expect.any(Number) });
    });

    it('oidcc-scope-address: the module skips itself, as scopes_supported does not list address', () => {
      expect(rp.config.serverMetadata().scopes_supported).not.toContain('address');
    });

    it('oidcc-scope-phone: the module skips itself, as scopes_supported does not list phone', () => {
      expect(rp.config.serverMetadata().scopes_supported).not.toContain('phone');
    });

    it('oidcc-alternate-happy-flow (the issue’s oidcc-ensure-other-scope-order-succeeds): the scope reversed and the parameters in another order succeed, with the scope-email checks', async () => {
      forge.set({ sub: `alice-${randomBytes(4).toString('hex')}`, claims: PROFILE });
      const request = await authorizationRequest(brokered, { scope: 'email openid' });
      // BuildPlainRedirectToAuthorizationEndpointReorderedParams: the query in reverse order.
      const url = new URL(request.url);
      url.search = new URLSearchParams([...url.searchParams].reverse()).toString();
      const back = await throughForgingProvider(url.href, { confirm: true });
      const callback = new URL(back.headers.get('location')!);
      expectCodeResponse(brokered, request, callback);
      const { tokens, claims } = await redeem(brokered, request, callback);
      expect(tokens.scope!.split(' ').sort()).toEqual(['email', 'openid']);
      const info = await expectUserinfo(await userinfo(brokered, tokens.access_token), claims.sub!);
      expect(info).toMatchObject({ email: PROFILE.email, email_verified: true });
      expect(claims).not.toHaveProperty('name');
    });
  });

  describe('parameters that must not cause an error (OpenID Connect Core §15.1, RFC 6749 §3.1)', () => {
    it('oidcc-display-page: display=page shows the normal login page and the flow succeeds', async () => {
      const { claims } = await happyFlow({ display: 'page' });
      expect(claims.sub).toEqual(expect.any(String));
    });

    it('oidcc-display-popup: display=popup shows the login page and the flow succeeds', async () => {
      const { claims } = await happyFlow({ display: 'popup' });
      expect(claims.sub).toEqual(expect.any(String));
    });

    it('oidcc-ensure-request-with-unknown-parameter-succeeds: extra=foobar is ignored and the flow succeeds', async () => {
      const { claims } = await happyFlow({ extra: 'foobar' });
      expect(claims.sub).toEqual(expect.any(String));
    });

    it('oidcc-login-hint: login_hint (buffy@ the issuer’s host) fills in the username and causes no error; the user signs in as themselves', async () => {
      const hint = `buffy@${new URL(app.baseUrl).hostname}`;
      const request = await authorizationRequest(rp, { login_hint: hint });
      const browser = new FormBrowser();
      const page = await browser.get(request.url);
      expect(page.status).toBe(200);
      expect(await page.clone().text()).toContain(`value="${hint}"`);
      const user = await createUser(app);
      const login = await browser.submit(page, app.baseUrl, user);
      const callback = new URL(login.headers.get('location')!);
      expectCodeResponse(rp, request, callback);
      const { claims } = await redeem(rp, request, callback);
      expect(claims.sub).toEqual(expect.any(String));
    });

    it('oidcc-ui-locales: ui_locales=se causes no error and the flow succeeds', async () => {
      const { claims } = await happyFlow({ ui_locales: 'se' });
      expect(claims.sub).toEqual(expect.any(String));
    });

    it('oidcc-claims-locales: claims_locales=se causes no error and the flow succeeds', async () => {
      const { claims } = await happyFlow({ claims_locales: 'se' });
      expect(claims.sub).toEqual(expect.any(String));
    });

    it('oidcc-ensure-request-with-acr-values-succeeds: acr_values "1 2" (no acr_values_supported is published) causes no error and the flow succeeds', async () => {
      expect(rp.config.serverMetadata().acr_values_supported).toBeUndefined();
      const { claims } = await happyFlow({ acr_values: '1 2' });
      // ValidateIdTokenACRClaimAgainstAcrValuesRequest warns without an acr claim: the service has no
      // authentication context classes, and the minimum Core §15.1 requires is no error.
      expect(claims).not.toHaveProperty('acr');
    });

    it('oidcc-claims-essential: a claims parameter asking for name as essential at userinfo succeeds; userinfo answers with the ID token’s sub', async () => {
      expect(rp.config.serverMetadata().claims_parameter_supported).toBe(false);
      const { tokens, claims } = await happyFlow({ claims: JSON.stringify({ userinfo: { name: { essential: true } } }) });
      const info = await expectUserinfo(await userinfo(rp, tokens.access_token), claims.sub!);
      // EnsureUserInfoContainsName warns: the claims parameter is not supported (the discovery
      // document says so), and with scope openid alone userinfo answers sub only.
      expect(info).toEqual({ sub: claims.sub });
      expect(claims).not.toHaveProperty('name');
    });
  });

  describe('redirect URIs and request objects', () => {
    it('oidcc-ensure-registered-redirect-uri: an unregistered redirect_uri is an error page, never a redirect, and stores nothing', async () => {
      const before = await stored();
      // CreateBadRedirectUriByAppending: the base URL + /callback/ + 10 random characters.
      const request = await authorizationRequest(rp, { redirect_uri: `${REDIRECT}/${randomBytes(5).toString('hex')}` });
      const answer = await fetch(request.url, { redirect: 'manual' });
      expect(answer.status).toBe(400);
      expect(answer.headers.get('location')).toBeNull();
      expect(await answer.text()).toContain('redirect_uri is not one registered');
      expect(await stored()).toBe(before);
    });

    it('oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported: an unsigned request object is refused request_not_supported at the redirect URI (the module then ends as skipped, which is permitted)', async () => {
      expect(rp.config.serverMetadata().request_parameter_supported).toBe(false);
      // skipTestIfNoneUnsupported: without request_object_signing_alg_values_supported the module runs.
      expect(rp.config.serverMetadata().request_object_signing_alg_values_supported).toBeUndefined();
      const before = await stored();
      const base = await authorizationRequest(rp);
      const answer = await fetch(requestObjectUrl(base), { redirect: 'manual' });
      expect(answer.status).toBe(302);
      const callback = new URL(answer.headers.get('location')!);
      expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT);
      expect(Object.fromEntries(callback.searchParams)).toMatchObject({ error: 'request_not_supported', iss: app.baseUrl });
      expect(callback.searchParams.has('code')).toBe(false);
      expect(await stored()).toBe(before);
    });

    it('oidcc-ensure-request-object-with-redirect-uri: a request object with the registered redirect_uri and an invalid one outside it is an error page, never a redirect', async () => {
      const before = await stored();
      const base = await authorizationRequest(rp);
      // AddInvalidRedirectUriToAuthorizationRequest: the query's redirect_uri gets `_invalid` appended to its path.
      const answer = await fetch(requestObjectUrl(base, `${REDIRECT}_invalid`), { redirect: 'manual' });
      expect(answer.status).toBe(400);
      expect(answer.headers.get('location')).toBeNull();
      expect(await answer.text()).toContain('redirect_uri is not one registered');
      expect(await stored()).toBe(before);
    });
  });

  it('oidcc-ensure-request-with-valid-pkce-succeeds: a request with an S256 challenge, redeemed with its verifier, succeeds', async () => {
    const { request, claims } = await happyFlow();
    expect(request.params).toMatchObject({ code_challenge: expect.any(String), code_challenge_method: 'S256' });
    expect(claims.sub).toEqual(expect.any(String));
  });

  it('(every other module) the suite’s requests carry no PKCE; the service requires it, so these tests add it: without, invalid_request', async () => {
    const request = await authorizationRequest(rp, { code_challenge: undefined, code_challenge_method: undefined });
    const params = expectErrorResponse(rp, request, await fetch(request.url, { redirect: 'manual' }));
    expect(params).toMatchObject({ error: 'invalid_request', error_description: 'code_challenge is required (PKCE with S256)' });
  });

  /**
   * The request as a request object passed by value (ConvertAuthorizationEndpointRequestToRequestObject,
   * SerializeRequestObjectWithNullAlgorithm, BuildRequestObjectByValueRedirectToAuthorizationEndpoint):
   * every parameter in an `alg: none` JWT; response_type, client_id, scope and redirect_uri (or
   * `queryRedirect`) repeated in the query.
   */
  function requestObjectUrl(request: Awaited<ReturnType<typeof authorizationRequest>>, queryRedirect = request.params.redirect_uri): string {
    const segment = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const object = `${segment({ alg: 'none' })}.${segment(request.params)}.`;
    const url = new URL(rp.config.serverMetadata().authorization_endpoint!);
    const query: Record<string, string> = { client_id: client.id, redirect_uri: queryRedirect, request: object, response_type: 'code', scope: request.params.scope };
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    return url.href;
  }
});
