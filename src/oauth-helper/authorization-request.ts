import type { ClientEntity } from '../clients/client.entity.js';
import { isAppRedirectAllowed, readRedirectUrl } from '../clients/redirect-pattern.js';
import type { IdTokenHint } from '../token/id-token-hints.service.js';
import { OAuthError } from '../oauth/oauth-error.js';
import { type OAuthParams, readOAuthParams } from '../oauth/oauth-params.js';
import { S256_CHALLENGE } from '../oauth/pkce.js';
import { parseScope, userGrantScopes } from '../oauth/scope.js';

/** RFC 6749 §4.1.2.1 and OpenID Connect Core §3.1.2.6: what an authorization request can be refused with at its redirect_uri. */
export type AuthorizationErrorCode =
  | 'invalid_request'
  | 'unauthorized_client'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'login_required'
  | 'request_not_supported'
  | 'request_uri_not_supported'
  | 'access_denied';

export type Prompt = 'none' | 'login' | 'consent' | 'select_account';
const PROMPTS: readonly string[] = ['none', 'login', 'consent', 'select_account'];

/** What the service carries back to the client as it was sent (its `state`, `nonce`), bounded: they end in a URL and an ID token. */
const ECHOED_MAX = 2048;

/**
 * A standard authorization request (RFC 6749 §4.1.1, OpenID Connect Core §3.1.2.1), checked: its
 * client, redirect_uri, PKCE challenge, and what it asks of the sign-in.
 */
export interface AuthorizationRequest {
  client: ClientEntity;
  redirectUri: string;
  /** The requested scopes the service understands (others are ignored, OpenID Connect Core §3.1.2.1). */
  scope: string[];
  state?: string;
  nonce?: string;
  codeChallenge: string;
  prompt: Prompt[];
  maxAge?: number;
  loginHint?: string;
  /** The user an `id_token_hint` names: only they may answer the request (OpenID Connect Core §3.1.2.1). */
  hintedUserId?: string;
}

/** What reading a request looks up: the client, and who an ID token the service issued names. */
export interface RequestLookups {
  findClient: (id: string) => Promise<ClientEntity | null>;
  readIdTokenHint: (token: string) => Promise<IdTokenHint | undefined>;
}

/** How reading a request ended: the request, an error only the user may see (a page), or an error for the client (a redirect). */
export type ReadAuthorizationRequest =
  | { kind: 'request'; request: AuthorizationRequest }
  | { kind: 'page'; message: string }
  | { kind: 'redirect'; location: string };

/** Whether the query is a standard authorization request rather than the helper's sign-in link (which has no redirect_uri). */
export const isStandardRequest = (query: unknown) => typeof query === 'object' && query !== null && 'redirect_uri' in query;

/** The authorization response's location: `params` (and the issuer, RFC 9207) added to the client's redirect_uri. */
export function authorizationResponse(redirectUri: string, issuer: string, params: Record<string, string | undefined>): string {
  const location = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) location.searchParams.append(name, value);
  location.searchParams.append('iss', issuer);
  return location.href;
}

/**
 * Reads a standard request in the order RFC 6749 §4.1.2.1 sets: while the client or its
 * redirect_uri is in doubt, only the user is told (a page, never a redirect); after that, the
 * client is, at its redirect_uri, with its `state` and the issuer.
 */
export async function readAuthorizationRequest(
  query: unknown,
  lookups: RequestLookups,
  issuer: string,
): Promise<ReadAuthorizationRequest> {
  let params: OAuthParams;
  try {
    params = readOAuthParams(query);
  } catch (error) {
    if (error instanceof OAuthError) return { kind: 'page', message: 'The request is malformed: a parameter is repeated or holds a character it cannot.' };
    throw error;
  }
  const clientId = params.get('client_id');
  const client = clientId === undefined || clientId.length > 256 ? null : await lookups.findClient(clientId);
  if (!client) return { kind: 'page', message: 'The request is for an application that is not registered here.' };
  if (!client.enabled) return { kind: 'page', message: `${client.name} has been disabled by an administrator, so it cannot sign in.` };
  const redirectUri = params.get('redirect_uri');
  // Read as every redirect address is (no user information, no fragment: RFC 6749 §3.1.2), and
  // exactly as registered (RFC 9700 §4.1.3): no normalising.
  const redirectUrl = redirectUri === undefined || redirectUri.length > 2048 ? undefined : readRedirectUrl(redirectUri);
  if (!redirectUrl || redirectUrl.href !== redirectUri || !isAppRedirectAllowed(redirectUrl, client.redirectPatterns)) {
    return { kind: 'page', message: `The request's redirect_uri is not one registered for ${client.name}.` };
  }

  const state = params.get('state');
  const refuse = (error: AuthorizationErrorCode, description: string): ReadAuthorizationRequest => ({
    kind: 'redirect',
    location: authorizationResponse(redirectUri!, issuer, { error, error_description: description, state: state !== undefined && state.length <= ECHOED_MAX ? state : undefined }),
  });
  if (state !== undefined && state.length > ECHOED_MAX) return refuse('invalid_request', `state is longer than ${ECHOED_MAX} characters`);
  const responseType = params.get('response_type');
  if (responseType === undefined) return refuse('invalid_request', 'response_type is missing');
  if (responseType !== 'code') return refuse('unsupported_response_type', 'only response_type=code is supported');
  if (!client.grants.includes('authorization_code')) return refuse('unauthorized_client', 'this client may not use the authorization code grant');
  if (params.has('request')) return refuse('request_not_supported', 'request objects are not supported: send the parameters in the query');
  if (params.has('request_uri')) return refuse('request_uri_not_supported', 'request_uri is not supported: send the parameters in the query');
  const responseMode = params.get('response_mode');
  if (responseMode !== undefined && responseMode !== 'query') return refuse('invalid_request', 'only response_mode=query is supported');

  const codeChallenge = params.get('code_challenge');
  if (codeChallenge === undefined) return refuse('invalid_request', 'code_challenge is required (PKCE with S256)');
  if (params.get('code_challenge_method') !== 'S256') return refuse('invalid_request', 'code_challenge_method must be S256');
  if (!S256_CHALLENGE.test(codeChallenge)) return refuse('invalid_request', 'code_challenge must be a base64url SHA-256 digest (43 characters)');

  let requested: string[];
  try {
    requested = parseScope(params.get('scope')) ?? [];
  } catch {
    return refuse('invalid_scope', 'scope is not a space-delimited list of scope tokens');
  }
  const understood = userGrantScopes(client);
  const scope = requested.filter((token) => understood.includes(token));

  const nonce = params.get('nonce');
  if (nonce !== undefined && nonce.length > ECHOED_MAX) return refuse('invalid_request', `nonce is longer than ${ECHOED_MAX} characters`);
  const prompt = (params.get('prompt') ?? '').split(' ').filter(Boolean);
  const unknownPrompt = prompt.find((value) => !PROMPTS.includes(value));
  // Not echoed: error_description may hold only RFC 6749 §4.1.2.1's characters, and the value is the client's.
  if (unknownPrompt !== undefined) return refuse('invalid_request', 'prompt may only be none, login, consent or select_account');
  if (prompt.includes('none') && prompt.length > 1) return refuse('invalid_request', 'prompt=none cannot be combined with another prompt');
  const maxAgeText = params.get('max_age');
  if (maxAgeText !== undefined && !/^\d{1,9}$/.test(maxAgeText)) return refuse('invalid_request', 'max_age is not a number of seconds');
  const loginHint = params.get('login_hint');
  const idTokenHint = params.get('id_token_hint');
  const hint = idTokenHint === undefined || idTokenHint.length > 8192 ? undefined : await lookups.readIdTokenHint(idTokenHint);
  if (idTokenHint !== undefined && hint?.aud !== client.id) return refuse('invalid_request', 'id_token_hint is not an ID token this server issued to this client');

  return {
    kind: 'request',
    request: {
      client,
      redirectUri: redirectUri!,
      scope,
      state,
      nonce,
      codeChallenge,
      prompt: prompt as Prompt[],
      maxAge: maxAgeText === undefined ? undefined : Number(maxAgeText),
      loginHint: loginHint !== undefined && loginHint.length <= 256 ? loginHint : undefined,
      hintedUserId: hint?.sub,
    },
  };
}
