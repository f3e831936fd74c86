import { GRANT_TYPES, ID_TOKEN_ALGS, resolveGrantAlias } from '../clients/client.entity.js';
import type { ClientView, NewClientInput } from '../clients/clients.service.js';
import { InvalidRedirectUrl, parseRedirectPattern } from '../clients/redirect-pattern.js';
import { SCOPE_TOKEN } from '../common/validation/scope-token.js';
import { OAuthError } from '../oauth/oauth-error.js';
import { OPENID_SCOPES } from '../oauth/scope.js';

// Client metadata (RFC 7591 §2) as this service registers it, read into the client registry's own
// input and written back from its view. The registry (ClientsService) judges the values by the
// rules the CLI's clients are judged by; what is read here is only the wire: each field's JSON
// type, the two kinds of redirect, which scopes registration may give (REGISTRATION_SCOPES), and
// the error code that names the field refused (RFC 7591 §3.2.2).

/** The metadata a registration may set; any other field is ignored, as RFC 7591 §2 says. */
export interface ClientMetadata {
  client_name?: string;
  grant_types?: string[];
  response_types?: string[];
  redirect_uris?: string[];
  voyage_redirect_patterns?: string[];
  post_logout_redirect_uris?: string[];
  scope?: string;
  token_endpoint_auth_method?: string;
  id_token_signed_response_alg?: string;
}

/** What a registered client's metadata says (RFC 7591 §3.2.1), never its secret. */
export interface RegisteredMetadata {
  client_id: string;
  client_id_issued_at: number;
  client_secret_expires_at: 0;
  client_name: string;
  grant_types: string[];
  response_types: string[];
  redirect_uris: string[];
  voyage_redirect_patterns: string[];
  post_logout_redirect_uris: string[];
  scope?: string;
  token_endpoint_auth_method: string;
  id_token_signed_response_alg: string;
}

const invalidMetadata = (description: string) => new OAuthError('invalid_client_metadata', description);
const invalidRedirect = (description: string) => new OAuthError('invalid_redirect_uri', description);

/**
 * A registration's body as the registry's input; throws invalid_client_metadata or
 * invalid_redirect_uri naming the field and the value refused. `null` is as absent.
 */
export function readClientMetadata(body: unknown, registrationScopes: readonly string[]): NewClientInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidMetadata('the body must be a JSON object of client metadata');
  const metadata = body as Record<string, unknown>;
  const name = text(metadata, 'client_name');
  if (name === undefined) throw invalidMetadata('client_name is required: the name operators and the sign-in page show for the client');
  const grants = list(metadata, 'grant_types')?.map(resolveGrantAlias);
  const unknownGrant = grants?.find((grant) => !(GRANT_TYPES as readonly string[]).includes(grant));
  if (unknownGrant !== undefined) throw invalidMetadata(`grant_types: ${JSON.stringify(unknownGrant)} is not supported; the supported ones are ${GRANT_TYPES.join(', ')}`);
  checkResponseTypes(list(metadata, 'response_types'), grants);
  const exact = list(metadata, 'redirect_uris') ?? [];
  const patterns = list(metadata, 'voyage_redirect_patterns') ?? [];
  for (const uri of exact) checkRedirect('redirect_uris', uri, 'exact');
  for (const pattern of patterns) checkRedirect('voyage_redirect_patterns', pattern, 'any');
  const method = text(metadata, 'token_endpoint_auth_method');
  if (method !== undefined && !['client_secret_basic', 'client_secret_post', 'none'].includes(method)) {
    throw invalidMetadata(`token_endpoint_auth_method: ${JSON.stringify(method)} is not supported; use client_secret_basic, client_secret_post or none`);
  }
  const alg = text(metadata, 'id_token_signed_response_alg');
  if (alg !== undefined && !(ID_TOKEN_ALGS as readonly string[]).includes(alg)) {
    throw invalidMetadata(`id_token_signed_response_alg: ${JSON.stringify(alg)} is not supported; use ${ID_TOKEN_ALGS.join(' or ')}`);
  }
  // The registry judges each value (a grant, an algorithm) by its own rules: unknown ones are refused there.
  return {
    name,
    grants: grants as NewClientInput['grants'],
    redirectPatterns: [...new Set([...exact, ...patterns])],
    postLogoutRedirectUris: list(metadata, 'post_logout_redirect_uris'),
    scopes: readScope(text(metadata, 'scope'), registrationScopes),
    tokenEndpointAuthMethod: method as NewClientInput['tokenEndpointAuthMethod'],
    idTokenSignedResponseAlg: alg as NewClientInput['idTokenSignedResponseAlg'],
  };
}

/** A client's metadata from its registry view: exact redirects are its `redirect_uris`, address ranges its `voyage_redirect_patterns`. */
export function toClientMetadata(client: ClientView): RegisteredMetadata {
  const ranges = client.redirect_patterns.filter((pattern) => parseRedirectPattern(pattern).kind === 'range');
  return {
    client_id: client.client_id,
    client_id_issued_at: Math.floor(Date.parse(client.created_at) / 1000),
    client_secret_expires_at: 0,
    client_name: client.name,
    grant_types: client.grants,
    response_types: client.grants.includes('authorization_code') ? ['code'] : [],
    redirect_uris: client.redirect_patterns.filter((pattern) => !ranges.includes(pattern)),
    voyage_redirect_patterns: ranges,
    post_logout_redirect_uris: client.post_logout_redirect_uris,
    ...(client.scopes.length > 0 ? { scope: client.scopes.join(' ') } : {}),
    token_endpoint_auth_method: client.token_endpoint_auth_method,
    id_token_signed_response_alg: client.id_token_signed_response_alg,
  };
}

function text(metadata: Record<string, unknown>, field: string): string | undefined {
  const value = metadata[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalidMetadata(`${field} must be a string`);
  return value;
}

function list(metadata: Record<string, unknown>, field: string): string[] | undefined {
  const value = metadata[field];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    const refuse = field.endsWith('redirect_uris') && field !== 'post_logout_redirect_uris' ? invalidRedirect : invalidMetadata;
    throw refuse(`${field} must be an array of strings`);
  }
  return value;
}

/** RFC 7591 §2.1: `code` goes with authorization_code, and no other response type is supported. */
function checkResponseTypes(responseTypes: string[] | undefined, grants: string[] | undefined): void {
  if (responseTypes === undefined) return;
  const other = responseTypes.find((type) => type !== 'code');
  if (other !== undefined) throw invalidMetadata(`response_types: ${JSON.stringify(other)} is not supported; the only one is code`);
  const wantsCode = responseTypes.includes('code');
  const hasCode = grants === undefined || grants.includes('authorization_code');
  if (wantsCode !== hasCode) throw invalidMetadata('response_types and grant_types disagree: code goes with the authorization_code grant, and only with it');
}

/** A standard request's redirect_uri is registered exactly; a helper's LAN pattern may be an address range. */
function checkRedirect(field: string, value: string, kind: 'exact' | 'any'): void {
  try {
    const pattern = parseRedirectPattern(value);
    if (kind === 'exact' && pattern.kind !== 'exact') throw new InvalidRedirectUrl('is an address range: give it in voyage_redirect_patterns');
  } catch (error) {
    if (error instanceof InvalidRedirectUrl) throw invalidRedirect(`${field}: ${JSON.stringify(value)} ${error.message}`);
    throw error;
  }
}

/**
 * `scope`, as the client's own scopes: each one among REGISTRATION_SCOPES. The OpenID Connect
 * scopes (openid, profile, email, offline_access) are every client's already, so they are accepted
 * and not stored. Absent: the registry's default (DEFAULT_CLIENT_SCOPE for client_credentials).
 */
function readScope(scope: string | undefined, registrationScopes: readonly string[]): string[] | undefined {
  if (scope === undefined) return undefined;
  const tokens = scope.split(' ');
  const malformed = tokens.find((token) => !SCOPE_TOKEN.test(token));
  if (malformed !== undefined) throw invalidMetadata('scope must be scope tokens separated by single spaces (RFC 6749 §3.3)');
  const own = [...new Set(tokens)].filter((token) => !(OPENID_SCOPES as readonly string[]).includes(token));
  const refused = own.filter((token) => !registrationScopes.includes(token));
  if (refused.length > 0) throw invalidMetadata(`scope: ${refused.join(' ')} may not be registered from software; allowed: ${registrationScopes.join(' ')}`);
  return own;
}
