import { setTimeout as sleep } from 'node:timers/promises';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HousekeepingService } from '../../../src/database/housekeeping.service.js';
import {
  authorizationRequest,
  type ConformanceRp,
  conformanceRp,
  ERROR_CHARS,
  expectCodeResponse,
  expectIdToken,
  expectTokenResponse,
  REDIRECT,
  redeem,
  shannonBits,
  signInFresh,
  userinfo,
} from '../../factories/conformance.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { type FormResponse, postForm, storedHash } from '../../factories/token-flow.factory.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// The OpenID Foundation's Basic OP plan, the modules about what a code and a refresh token are
// good for: oidcc-codereuse, oidcc-codereuse-30seconds (AbstractOIDCCAuthCodeReuse) and
// oidcc-refresh-token (RefreshTokenRequestSteps with two clients). Named after the modules.

/** The code grant as the suite sends it the second time (CallTokenEndpointAndReturnFullResponse with client_secret_basic). */
function tokenRequest(app: TestApp, client: TestClient, params: Record<string, string>) {
  return postForm(app, '/sso/token', params, { authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}` });
}

/**
 * AbstractOIDCCAuthCodeReuse.checkResponse: 400 (CheckTokenEndpointHttpStatus400), JSON,
 * invalid_grant (CheckErrorFromTokenEndpointResponseErrorInvalidGrant), `error` and
 * `error_description` within RFC 6749's characters, no `error_uri`.
 */
function expectInvalidGrant(answer: FormResponse) {
  expect(answer.status).toBe(400);
  expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
  expect(answer.body.error).toBe('invalid_grant');
  expect(answer.body.error).toMatch(ERROR_CHARS);
  if (answer.body.error_description !== undefined) expect(answer.body.error_description).toMatch(ERROR_CHARS);
  expect(answer.body).not.toHaveProperty('error_uri');
}

describe('OpenID Connect Basic OP conformance: codes and refresh tokens', () => {
  let app: TestApp;
  let client: TestClient;
  let rp: ConformanceRp;

  beforeAll(async () => {
    app = await startTestApp({});
    client = await createClient(app, { redirectPatterns: [REDIRECT] });
    rp = await conformanceRp(app, client);
  });
  afterAll(() => app?.close());

  /** The happy flow of the first client: the request, its code, and the tokens it gave. */
  async function codeAndTokens(on: ConformanceRp = rp) {
    const request = await authorizationRequest(on, on.config.serverMetadata().scopes_supported?.includes('offline_access') ? { scope: 'openid offline_access', prompt: 'consent' } : {});
    const callback = await signInFresh(on, request, await createUser(app));
    const code = expectCodeResponse(on, request, callback);
    return { request, code, ...(await redeem(on, request, callback)) };
  }

  it('oidcc-codereuse: the code used a second time, right after the first, is invalid_grant', async () => {
    const { request, code } = await codeAndTokens();
    const again = await tokenRequest(app, client, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: request.verifier });
    expectInvalidGrant(again);
  });

  it('oidcc-codereuse-30seconds: the code used again 30 s after the first use is invalid_grant, and the access token issued from it no longer opens userinfo', async () => {
    const { request, code, tokens } = await codeAndTokens();
    expect((await userinfo(rp, tokens.access_token)).status).toBe(200);
    // WaitFor30Seconds, as the database sees it: the code's times moved 30 s back (the service
    // reads them with PostgreSQL's now()), and a housekeeping round in between, which keeps a used
    // code until it expires so that a replay is still recognised as one.
    const [moved] = await query<{ expired: boolean }>(
      app.databaseUrl,
      `UPDATE authorization_codes SET issued_at = issued_at - interval '30 seconds', consumed_at = consumed_at - interval '30 seconds', expires_at = expires_at - interval '30 seconds'
       WHERE code_hash = $1 RETURNING expires_at <= now() AS expired`,
      [storedHash(code)],
    );
    expect(moved).toEqual({ expired: false });
    await app.get(HousekeepingService).purge();

    const again = await tokenRequest(app, client, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: request.verifier });
    expectInvalidGrant(again);
    // RFC 6749 §4.1.2 ("SHOULD revoke"), EnsureHttpStatusCodeIs4xx: CallProtectedResource with the first access token.
    const refused = await userinfo(rp, tokens.access_token);
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(500);
    // And the refresh token issued with it.
    await expect(oidc.refreshTokenGrant(rp.config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('oidcc-refresh-token: a refresh (after 1 s) gives new tokens and an ID token with the same iss, sub, aud and auth_time and a new iat; the refresh token is bound to its client', async () => {
    const metadata = rp.config.serverMetadata();
    const first = await codeAndTokens();
    const refreshToken = first.tokens.refresh_token!;
    // EnsureServerConfigurationSupportsRefreshToken, EnsureRefreshTokenContainsAllowedCharactersOnly.
    expect(metadata.grant_types_supported).toContain('refresh_token');
    expect(refreshToken).toMatch(/^[\x20-\x7e]+$/);

    await sleep(1000);
    // RefreshTokenRequestSteps: the client's scope sent again (AddScopeToTokenEndpointRequest).
    const refreshed = await oidc.refreshTokenGrant(rp.config, refreshToken, { scope: first.request.params.scope });
    expectTokenResponse(rp.answers.at(-1)!);
    expect(refreshed.access_token).not.toBe(first.tokens.access_token);
    // EnsureMinimumAccessTokenEntropy, EnsureMinimumRefreshTokenLength and …Entropy.
    expect(shannonBits(refreshed.access_token)).toBeGreaterThan(96);
    expect(Buffer.byteLength(refreshed.refresh_token!) * 8).toBeGreaterThanOrEqual(128);
    expect(shannonBits(refreshed.refresh_token!)).toBeGreaterThan(96);
    // CompareIdTokenClaims (OpenID Connect Core §12.2).
    const second = await expectIdToken(rp, refreshed.id_token!, { accessToken: refreshed.access_token });
    for (const claim of ['iss', 'sub', 'aud', 'auth_time'] as const) expect(second[claim], claim).toEqual(first.claims[claim]);
    expect(second.iat).not.toBe(first.claims.iat);
    expect(first.claims).not.toHaveProperty('azp');
    expect(second).not.toHaveProperty('azp');
    // requestProtectedResource with the new access token.
    expect((await userinfo(rp, refreshed.access_token)).status).toBe(200);

    // The second client's refresh token, sent by the first client (RefreshTokenRequestExpectingErrorSteps).
    const secondClient = await createClient(app, { redirectPatterns: [REDIRECT] });
    const other = await codeAndTokens(await conformanceRp(app, secondClient));
    const stolen = await tokenRequest(app, client, { grant_type: 'refresh_token', refresh_token: other.tokens.refresh_token!, scope: other.request.params.scope });
    expectInvalidGrant(stolen);
  });
});
