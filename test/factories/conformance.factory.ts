import { createHash } from 'node:crypto';
import { createRemoteJWKSet, decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { expect } from 'vitest';
import { FormBrowser } from '../setup/form-browser.js';
import type { TestApp } from '../setup/test-app.js';
import type { TestClient } from './oauth.factory.js';
import type { PortalUser } from './token-flow.factory.js';

/**
 * The relying party of the OpenID Foundation's conformance suite, "OpenID Connect Core: Basic
 * Certification Profile" authorization server plan (openid-certification/conformance-suite,
 * src/main/java/net/openid/conformance/openid/): its authorization request (state, nonce,
 * response_type=code, scope openid), openid-client 6 after OpenID Connect discovery for the code
 * grant, and the conditions its modules evaluate, named after them in the comments.
 *
 * One difference, made on purpose: the suite sends PKCE only in
 * oidcc-ensure-request-with-valid-pkce-succeeds; the service requires it of every request
 * (CONTRACT.md), so every request here carries an S256 challenge.
 */

/** The static client's registered redirect URI (the suite's `…/callback`), and the one its instructions add dummy parameters to. */
export const REDIRECT = 'http://127.0.0.1:8765/callback';
export const REDIRECT_WITH_QUERY = 'http://127.0.0.1:8765/callback?dummy1=lorem&dummy2=ipsum';

/** The suite's allowance for clock skew in ID token times (ValidateIdToken). */
const SKEW_SECONDS = 5 * 60;
/** RFC 6749 §4.1.2.1 and §5.2: what `error` and `error_description` may hold (ValidateErrorDescriptionFromAuthorizationEndpointResponseError). */
export const ERROR_CHARS = /^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/;
const ERROR_DESCRIPTION_CHARS = /^[\x09\x0a\x0d\x20-\x21\x23-\x5b\x5d-\x7e]+$/;
/** What an authorization error response may carry (CheckForUnexpectedParametersInErrorResponseFromAuthorizationEndpoint). */
const ERROR_RESPONSE_PARAMS = ['error', 'error_description', 'error_uri', 'state', 'session_state', 'iss'];

/** What the token endpoint answered, as the suite records it (status, headers, body), before openid-client read it. */
export interface TokenEndpointAnswer {
  /** What was sent: the headers and the form. */
  sent: { headers: Headers; form: URLSearchParams };
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

export interface ConformanceRp {
  app: TestApp;
  client: TestClient;
  config: oidc.Configuration;
  /** Every token endpoint answer so far. */
  answers: TokenEndpointAnswer[];
}

/** A static client's RP after OpenID Connect discovery (GetDynamicServerConfiguration), authenticating as `auth`. */
export async function conformanceRp(app: TestApp, client: TestClient, auth: 'client_secret_basic' | 'client_secret_post' = 'client_secret_basic'): Promise<ConformanceRp> {
  const method = auth === 'client_secret_basic' ? oidc.ClientSecretBasic(client.secret) : oidc.ClientSecretPost(client.secret);
  const config = await oidc.discovery(new URL(app.baseUrl), client.id, undefined, method, { execute: [oidc.allowInsecureRequests] });
  const answers: TokenEndpointAnswer[] = [];
  const tokenEndpoint = config.serverMetadata().token_endpoint!;
  config[oidc.customFetch] = async (url, options) => {
    const response = await fetch(url, options);
    if (url !== tokenEndpoint) return response;
    const sent = { headers: new Headers(options.headers), form: new URLSearchParams(options.body as URLSearchParams | string) };
    answers.push({ sent, status: response.status, headers: response.headers, body: (await response.clone().json()) as Record<string, unknown> });
    return response;
  };
  return { app, client, config, answers };
}

/** One authorization request as the suite builds it (CreateAuthorizationRequestSteps), its values kept for the checks. */
export interface AuthorizationRequest {
  url: string;
  params: Record<string, string>;
  state?: string;
  nonce?: string;
  verifier: string;
}

/**
 * `response_type=code`, the client, its redirect URI, `scope=openid`, a fresh `state` and
 * `nonce`, and the PKCE challenge; `changes` adds parameters, or removes one (undefined).
 */
export async function authorizationRequest(rp: ConformanceRp, changes: Record<string, string | undefined> = {}): Promise<AuthorizationRequest> {
  const verifier = oidc.randomPKCECodeVerifier();
  const all: Record<string, string | undefined> = {
    response_type: 'code',
    client_id: rp.client.id,
    redirect_uri: REDIRECT,
    scope: 'openid',
    state: oidc.randomState(),
    nonce: oidc.randomNonce(),
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...changes,
  };
  const params = Object.fromEntries(Object.entries(all).filter((entry): entry is [string, string] => entry[1] !== undefined));
  const url = new URL(rp.config.serverMetadata().authorization_endpoint!);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return { url: url.href, params, state: params.state, nonce: params.nonce, verifier };
}

/** Where the browser went: back to the client at once (a session), or through the login page as `user`. */
export interface BrowserTrip {
  callback: URL;
  /** Whether the login page asked for the password (the suite's "expect a login page" placeholder). */
  loginPageShown: boolean;
}

/** The browser follows the request: straight back within a session, else the login page, where `user` signs in. */
export async function followInBrowser(rp: ConformanceRp, browser: FormBrowser, request: AuthorizationRequest, user: PortalUser): Promise<BrowserTrip> {
  const page = await browser.get(request.url);
  if (page.status === 302) return { callback: new URL(page.headers.get('location')!), loginPageShown: false };
  expect(page.status, 'the login page').toBe(200);
  const html = await page.clone().text();
  expect(html).toContain('name="password"');
  const login = await browser.submit(page, rp.app.baseUrl, { username: user.username, password: user.password });
  expect(login.status, 'the sign-in redirects back to the client').toBe(302);
  return { callback: new URL(login.headers.get('location')!), loginPageShown: true };
}

/** A new browser (no cookies: "please remove any cookies") signs `user` in for `request`; the callback. */
export async function signInFresh(rp: ConformanceRp, request: AuthorizationRequest, user: PortalUser): Promise<URL> {
  const trip = await followInBrowser(rp, new FormBrowser(), request, user);
  expect(trip.loginPageShown).toBe(true);
  return trip.callback;
}

/**
 * The successful authorization response (onAuthorizationCallbackResponse): at the redirect URI,
 * with its own query kept (CheckMatchingCallbackParameters), the `state` (CheckStateInAuthorizationResponse),
 * the issuer (ValidateIssIfPresentInAuthorizationResponse), and a code of at least 128 bits
 * (EnsureMinimumAuthorizationCodeLength) and 96 bits of Shannon entropy (EnsureMinimumAuthorizationCodeEntropy).
 */
export function expectCodeResponse(rp: ConformanceRp, request: AuthorizationRequest, callback: URL): string {
  const redirect = new URL(request.params.redirect_uri);
  expect(`${callback.origin}${callback.pathname}`).toBe(`${redirect.origin}${redirect.pathname}`);
  for (const [name, value] of redirect.searchParams) expect(callback.searchParams.get(name)).toBe(value);
  expect(callback.searchParams.get('error')).toBeNull();
  expect(callback.searchParams.get('state')).toBe(request.state ?? null);
  expect(callback.searchParams.get('iss')).toBe(rp.config.serverMetadata().issuer);
  const code = callback.searchParams.get('code')!;
  expect(Buffer.byteLength(code) * 8).toBeGreaterThanOrEqual(128);
  expect(shannonBits(code)).toBeGreaterThan(96);
  return code;
}

/**
 * An error authorization response (performGenericAuthorizationEndpointErrorResponseValidation):
 * at the redirect URI, the `state` returned unchanged, the issuer, an error and no code, nothing
 * but the error parameters, and `error`/`error_description` within RFC 6749's characters.
 */
export function expectErrorResponse(rp: ConformanceRp, request: AuthorizationRequest, response: Response): Record<string, string> {
  expect(response.status).toBe(302);
  const callback = new URL(response.headers.get('location')!);
  expect(`${callback.origin}${callback.pathname}`).toBe(request.params.redirect_uri);
  const params = Object.fromEntries(callback.searchParams);
  expect(params.state).toBe(request.state);
  expect(params.iss).toBe(rp.config.serverMetadata().issuer);
  expect(params).not.toHaveProperty('code');
  expect(Object.keys(params).filter((name) => !ERROR_RESPONSE_PARAMS.includes(name))).toEqual([]);
  expect(params.error).toMatch(ERROR_CHARS);
  if (params.error_description !== undefined) expect(params.error_description).toMatch(ERROR_DESCRIPTION_CHARS);
  return params;
}

/** The code grant with openid-client (state, iss, nonce, ID token claims) and the suite's own token and ID token checks. */
export async function redeem(rp: ConformanceRp, request: AuthorizationRequest, callback: URL, checks: { maxAge?: number } = {}) {
  const tokens = await oidc.authorizationCodeGrant(rp.config, callback, {
    pkceCodeVerifier: request.verifier,
    expectedState: request.state ?? oidc.skipStateCheck,
    expectedNonce: request.nonce,
    idTokenExpected: true,
    maxAge: checks.maxAge,
  });
  expectTokenResponse(rp.answers.at(-1)!);
  const claims = await expectIdToken(rp, tokens.id_token!, { nonce: request.nonce, accessToken: tokens.access_token });
  return { tokens, claims };
}

/**
 * A successful token endpoint answer (requestAuthorizationCode, RefreshTokenRequestSteps): 200
 * JSON, never cached (CheckTokenEndpointCacheHeaders), a bearer access token, a valid expires_in
 * (ValidateExpiresIn) and printable refresh token (EnsureRefreshTokenContainsAllowedCharactersOnly).
 */
export function expectTokenResponse(answer: TokenEndpointAnswer): void {
  expect(answer.status).toBe(200);
  expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
  expect(answer.headers.get('cache-control')?.split(',').map((part) => part.trim())).toContain('no-store');
  expect(String(answer.body.token_type).toLowerCase()).toBe('bearer');
  expect(answer.body.access_token).toEqual(expect.any(String));
  expect(answer.body.expires_in).toEqual(expect.any(Number));
  expect(answer.body.expires_in).toBeGreaterThan(0);
  expect(answer.body.expires_in).toBeLessThanOrEqual(31_536_000);
  if (answer.body.refresh_token !== undefined) expect(answer.body.refresh_token).toMatch(/^[\x20-\x7e]+$/);
}

/**
 * PerformStandardIdTokenChecks: the signature by a key of the discovered JWKS with its `kid`
 * (ValidateIdTokenSignature, OIDCC-10.1), `iss`, `aud`, `exp`, `iat`, `auth_time` within the
 * suite's skew (ValidateIdToken), `sub` (CheckForSubjectInIdToken), the nonce sent or none
 * (ValidateIdTokenNonce), the standard claims' types (ValidateIdTokenStandardClaims,
 * EnsureIdTokenUpdatedAtValid), and `at_hash` when present (ValidateAtHash); no `c_hash` in the code flow.
 */
export async function expectIdToken(rp: ConformanceRp, idToken: string, expected: { nonce?: string; accessToken?: string }): Promise<JWTPayload> {
  const metadata = rp.config.serverMetadata();
  const header = decodeProtectedHeader(idToken);
  expect(header.kid).toEqual(expect.any(String));
  const { payload } = await jwtVerify(idToken, createRemoteJWKSet(new URL(metadata.jwks_uri!)), { issuer: metadata.issuer, audience: rp.client.id, clockTolerance: SKEW_SECONDS });
  const now = Math.floor(Date.now() / 1000);
  expect(payload.sub).toEqual(expect.any(String));
  expect(payload.sub).not.toBe('');
  expect(payload.exp).toBeLessThan(now + 50 * 365 * 86_400);
  expect(Math.abs(payload.iat! - now)).toBeLessThanOrEqual(SKEW_SECONDS);
  if (payload.auth_time !== undefined) {
    expect(payload.auth_time).toBeLessThanOrEqual(now + SKEW_SECONDS);
    expect(payload.auth_time).toBeGreaterThan(now - 365 * 86_400);
  }
  if (expected.nonce === undefined) expect(payload).not.toHaveProperty('nonce');
  else expect(payload.nonce).toBe(expected.nonce);
  if (payload.acr !== undefined) expect(payload.acr).toMatch(/./);
  expectStandardClaimTypes(payload);
  if (payload.at_hash !== undefined && expected.accessToken !== undefined) expect(payload.at_hash).toBe(leftHalfHash(expected.accessToken));
  expect(payload).not.toHaveProperty('c_hash');
  return payload;
}

/** The ID token claims the suite accepts without their being requested (EnsureIdTokenDoesNotContainNonRequestedClaims), and those of the scopes. */
const ID_TOKEN_CLAIMS = ['iss', 'sub', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'acr', 'amr', 'azp', 'at_hash', 'c_hash', 'nbf', 'jti', 'sid'];
export const SCOPE_CLAIMS: Record<string, string[]> = {
  openid: ['sub'],
  profile: ['name', 'given_name', 'family_name', 'middle_name', 'nickname', 'profile', 'picture', 'website', 'gender', 'birthdate', 'zoneinfo', 'locale', 'updated_at', 'preferred_username'],
  email: ['email', 'email_verified'],
  address: ['address'],
  phone: ['phone_number', 'phone_number_verified'],
  offline_access: [],
};

/** The ID token's claims that neither the ID token itself nor a requested scope accounts for. */
export const unrequestedClaims = (payload: JWTPayload, scope: string) =>
  Object.keys(payload).filter((claim) => !ID_TOKEN_CLAIMS.includes(claim) && !scope.split(' ').some((token) => SCOPE_CLAIMS[token]?.includes(claim)));

/** OpenID Connect Core §5.1: the types of the standard claims that are present (ValidateUserInfoStandardClaims, ValidateIdTokenStandardClaims). */
export function expectStandardClaimTypes(claims: Record<string, unknown>): void {
  for (const name of ['name', 'given_name', 'family_name', 'middle_name', 'nickname', 'preferred_username', 'profile', 'picture', 'website', 'email', 'gender', 'birthdate', 'zoneinfo', 'locale', 'phone_number']) {
    if (claims[name] !== undefined) expect(claims[name], name).toEqual(expect.any(String));
  }
  for (const name of ['email_verified', 'phone_number_verified']) if (claims[name] !== undefined) expect(claims[name], name).toEqual(expect.any(Boolean));
  // EnsureUserInfoUpdatedAtValid, EnsureIdTokenUpdatedAtValid: seconds since the epoch, not milliseconds.
  if (claims.updated_at !== undefined) {
    expect(Number.isInteger(claims.updated_at)).toBe(true);
    expect(claims.updated_at).toBeLessThan(Date.now() / 1000 + SKEW_SECONDS);
  }
}

/**
 * AbstractOIDCCUserInfoTest: the UserInfo endpoint answers 200 JSON (EnsureContentTypeJson) with
 * `sub` (EnsureUserInfoContainsSub), the ID token's (VerifyUserInfoAndIdTokenInTokenEndpointSameSub),
 * and standard claims of the right types.
 */
export async function expectUserinfo(response: Response, sub: string): Promise<Record<string, unknown>> {
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const claims = (await response.json()) as Record<string, unknown>;
  expect(claims.sub).toBe(sub);
  expectStandardClaimTypes(claims);
  return claims;
}

/** The userinfo request the suite sends (CallUserInfoEndpoint): GET with the bearer header, or POST with it in the header or the body. */
export function userinfo(rp: ConformanceRp, accessToken: string, how: 'get' | 'post-header' | 'post-body' = 'get'): Promise<Response> {
  const endpoint = rp.config.serverMetadata().userinfo_endpoint!;
  if (how === 'get') return fetch(endpoint, { headers: { authorization: `Bearer ${accessToken}` } });
  if (how === 'post-header') return fetch(endpoint, { method: 'POST', headers: { authorization: `Bearer ${accessToken}` } });
  return fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ access_token: accessToken }) });
}

/** OpenID Connect Core §3.1.3.6: the left half of the SHA-256 of the access token, base64url. */
export const leftHalfHash = (value: string) => createHash('sha256').update(value).digest().subarray(0, 16).toString('base64url');

/** AbstractEnsureMinimumEntropy: Shannon entropy per character times the length. */
export function shannonBits(value: string): number {
  const counts = new Map<string, number>();
  for (const char of value) counts.set(char, (counts.get(char) ?? 0) + 1);
  let perChar = 0;
  for (const count of counts.values()) perChar -= (count / value.length) * Math.log2(count / value.length);
  return perChar * value.length;
}
