import type { KeyFacts } from './keys.repository.js';
import type { SigningAlg, SigningKeyEntity } from './signing-key.entity.js';

/** `pending`: published by a rotation, signing from `activates_at`. */
export type KeyStatus = 'pending' | 'active' | 'retired' | 'revoked' | 'expired';

/** A key as the CLI prints it: public facts only, wire names in snake_case. */
export interface KeyView {
  kid: string;
  alg: SigningAlg;
  status: KeyStatus;
  created_at: string;
  activates_at: string;
  retired_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
}

/**
 * Revoked wins over expired: an operator looking for the stolen key must see what was done to it.
 * `now` is PostgreSQL's, the clock that set these times.
 */
export function keyStatus(key: KeyFacts, now: Date): KeyStatus {
  if (key.revokedAt) return 'revoked';
  if (key.expiresAt && key.expiresAt <= now) return 'expired';
  if (key.activatesAt > now) return 'pending';
  return key.retiredAt && key.retiredAt <= now ? 'retired' : 'active';
}

export function toKeyView(key: KeyFacts, now: Date): KeyView {
  return {
    kid: key.kid,
    alg: key.alg,
    status: keyStatus(key, now),
    created_at: key.createdAt.toISOString(),
    activates_at: key.activatesAt.toISOString(),
    retired_at: key.retiredAt?.toISOString() ?? null,
    expires_at: key.expiresAt?.toISOString() ?? null,
    revoked_at: key.revokedAt?.toISOString() ?? null,
  };
}

/** A key that signs, or will from `activates_at`. */
export const toNewKeyView = (key: SigningKeyEntity) => ({
  kid: key.kid,
  alg: key.alg,
  created_at: key.createdAt.toISOString(),
  activates_at: key.activatesAt.toISOString(),
});
