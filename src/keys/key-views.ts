import type { KeyFacts } from './keys.repository.js';
import type { SigningAlg, SigningKeyEntity } from './signing-key.entity.js';

export type KeyStatus = 'active' | 'retired' | 'revoked' | 'expired';

/** A key as the CLI prints it: public facts only, wire names in snake_case. */
export interface KeyView {
  kid: string;
  alg: SigningAlg;
  status: KeyStatus;
  created_at: string;
  retired_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
}

/** Revoked wins over expired: an operator looking for the stolen key must see what was done to it. */
export function keyStatus(key: KeyFacts, now = Date.now()): KeyStatus {
  if (key.revokedAt) return 'revoked';
  if (!key.retiredAt) return 'active';
  return key.expiresAt && key.expiresAt.getTime() <= now ? 'expired' : 'retired';
}

export function toKeyView(key: KeyFacts): KeyView {
  return {
    kid: key.kid,
    alg: key.alg,
    status: keyStatus(key),
    created_at: key.createdAt.toISOString(),
    retired_at: key.retiredAt?.toISOString() ?? null,
    expires_at: key.expiresAt?.toISOString() ?? null,
    revoked_at: key.revokedAt?.toISOString() ?? null,
  };
}

/** A key that just started signing. */
export const toNewKeyView = (key: SigningKeyEntity) => ({ kid: key.kid, alg: key.alg, created_at: key.createdAt.toISOString() });
