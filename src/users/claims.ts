import type { UserEntity } from './user.entity.js';

/**
 * The OpenID Connect claims about a user, per scope (OpenID Connect Core §5.4), for userinfo and
 * ID tokens alike: both call `claimsFor`, so what a scope reveals is decided here once.
 *
 * Sources: a brokered user's profile is what their identity provider said at the last sign-in; a
 * local user has only a username, which is both their `preferred_username` and the name pages
 * show. A claim the service does not know is left out (§5.3.2), never sent empty. The provider's
 * `email_verified` is passed on only when the provider is trusted for it (`idp --trust-email`):
 * under the service's issuer it would otherwise vouch for what only the provider checked.
 */

export const OPENID_SCOPE = 'openid';

/** The scopes that reveal claims, and the claims each reveals. */
export const SCOPE_CLAIMS = {
  profile: ['name', 'preferred_username', 'updated_at'],
  email: ['email', 'email_verified'],
} as const;

/** What the discovery document lists as claims_supported: the ID token's own claims and those of the scopes. */
export const CLAIMS_SUPPORTED = ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'at_hash', 'sid', ...SCOPE_CLAIMS.profile, ...SCOPE_CLAIMS.email];

export interface ScopedClaims {
  name?: string;
  preferred_username?: string;
  /** Seconds since the epoch (§5.1). */
  updated_at?: number;
  email?: string;
  email_verified?: boolean;
}

/** What the claims are read from: the user row, and whether their provider is trusted for `email_verified` (false for a local user). */
export type ClaimsSource = Pick<UserEntity, 'username' | 'upstreamIssuer' | 'profile' | 'profileUpdatedAt'> & { trustEmail: boolean };

/** `trustEmail` in SQL, for the user row `userAlias`: its provider's setting (false when it has none, or it was deleted). */
export const trustEmailSql = (userAlias: string) => `COALESCE((SELECT p.trust_email FROM identity_providers p WHERE p.name = ${userAlias}.provider), false)`;

/** The claims `scopes` allow about `user`; `sub` is the caller's (the user's id). */
export function claimsFor(user: ClaimsSource, scopes: readonly string[]): ScopedClaims {
  const claims: ScopedClaims = {};
  // A brokered user's username (NAME:sub) is the CLI's handle, not a name: their provider's profile speaks for them.
  const profile = user.upstreamIssuer ? (user.profile ?? {}) : { preferred_username: user.username, name: user.username };
  if (scopes.includes('profile')) {
    if (profile.name) claims.name = profile.name;
    if (profile.preferred_username) claims.preferred_username = profile.preferred_username;
    claims.updated_at = Math.floor(user.profileUpdatedAt.getTime() / 1000);
  }
  if (scopes.includes('email') && user.profile?.email) {
    claims.email = user.profile.email;
    // Verified only when a trusted provider said so: a relying party may take a verified address as the user's.
    claims.email_verified = user.trustEmail && user.profile.email_verified === true;
  }
  return claims;
}
