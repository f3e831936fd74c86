import { SCOPE_TOKEN } from '../common/validation/scope-token.js';
import { invalidScope, invalidRequest } from './oauth-error.js';

/** RFC 6749 §3.3: space-delimited scope tokens; order and duplicates do not matter. */
export function parseScope(scope: string | undefined): string[] | null {
  if (scope === undefined) return null;
  const tokens = scope.split(' ');
  if (tokens.some((token) => !SCOPE_TOKEN.test(token))) throw invalidRequest('scope is not a space-delimited list of scope tokens');
  return [...new Set(tokens)];
}

/** Every requested scope must be one the client (or the grant) allows. */
export function assertScopeAllowed(requested: string[] | null, allowed: readonly string[]): void {
  const refused = requested?.filter((scope) => !allowed.includes(scope)) ?? [];
  if (refused.length > 0) throw invalidScope(`scope not allowed for this client: ${refused.join(' ')}`);
}

/**
 * The scopes of OpenID Connect Core §5.4 and §11: every client that signs users in holds them,
 * beside the scopes it is registered with (they reveal the user's own claims to the user's client).
 */
export const OPENID_SCOPES = ['openid', 'profile', 'email', 'offline_access'] as const;

/** The scopes a client may ask of a user's grant: the standard ones and its own. */
export const userGrantScopes = (client: { scopes: readonly string[] }): string[] => [...OPENID_SCOPES, ...client.scopes];

export const formatScope = (scopes: string[] | null) => (scopes && scopes.length > 0 ? scopes.join(' ') : null);
