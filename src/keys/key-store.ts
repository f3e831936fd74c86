import type { EntityManager } from 'typeorm';
import type { GeneratedKey } from './key-pair.js';
import { SigningKeyEntity, type StoredPrivateKey } from './signing-key.entity.js';

/** Every instance LISTENs here; the payload is the revoked kid. */
export const KEY_REVOKED_CHANNEL = 'vc_key_revoked';

/** When a key retired now stops being published: once the last token it signed has expired. */
const RETIRED_KEY_EXPIRY = 'now() + make_interval(secs => retired_lifetime_seconds)';

/** A key loaded with its private columns (they are `select: false` otherwise). */
export type KeyWithPrivatePart = SigningKeyEntity;

export interface NewKey extends Omit<GeneratedKey, 'privateKeyPem'>, StoredPrivateKey {
  retiredLifetimeSeconds: number;
}

/** Key queries inside the transaction that holds the key lock. */
export class KeyStore {
  constructor(private readonly manager: EntityManager) {}

  /** The key that signs, private part included. */
  findActive(): Promise<KeyWithPrivatePart | null> {
    return this.withPrivateParts().where('key.retired_at IS NULL').getOne();
  }

  /** Every key, private parts included (to check or seal them at start). */
  findAllWithPrivateParts(): Promise<KeyWithPrivatePart[]> {
    return this.withPrivateParts().getMany();
  }

  /** One key without its private part, locked against a concurrent change. */
  findByKid(kid: string): Promise<SigningKeyEntity | null> {
    return this.manager.findOne(SigningKeyEntity, { where: { kid }, lock: { mode: 'pessimistic_write' } });
  }

  async insert(key: NewKey): Promise<SigningKeyEntity> {
    await this.manager.insert(SigningKeyEntity, { ...key, retiredAt: null, expiresAt: null, revokedAt: null });
    return this.manager.findOneByOrFail(SigningKeyEntity, { kid: key.kid });
  }

  /** Stops the key signing; it stays published for its stored lifetime, by PostgreSQL's clock like every expiry. */
  async retire(kid: string): Promise<SigningKeyEntity> {
    await this.manager
      .createQueryBuilder()
      .update(SigningKeyEntity)
      .set({ retiredAt: () => 'now()', expiresAt: () => RETIRED_KEY_EXPIRY })
      .where('kid = :kid', { kid })
      .execute();
    return this.manager.findOneByOrFail(SigningKeyEntity, { kid });
  }

  /** Withdraws the key: retired if it was not, and `expires_at` kept as the end of its tokens' lifetime. */
  async revoke(kid: string): Promise<SigningKeyEntity> {
    await this.manager
      .createQueryBuilder()
      .update(SigningKeyEntity)
      .set({ revokedAt: () => 'now()', retiredAt: () => 'coalesce(retired_at, now())', expiresAt: () => `coalesce(expires_at, ${RETIRED_KEY_EXPIRY})` })
      .where('kid = :kid', { kid })
      .execute();
    return this.manager.findOneByOrFail(SigningKeyEntity, { kid });
  }

  /** Delivered to every instance when the transaction commits, and only then. */
  async notifyRevoked(kid: string): Promise<void> {
    await this.manager.query('SELECT pg_notify($1, $2)', [KEY_REVOKED_CHANNEL, kid]);
  }

  async storePrivatePart(kid: string, stored: StoredPrivateKey): Promise<void> {
    await this.manager.update(SigningKeyEntity, { kid }, stored);
  }

  /** Never lowers it: tokens already signed under a longer setting must stay verifiable. */
  async raiseRetiredLifetime(kid: string, seconds: number): Promise<void> {
    await this.manager
      .createQueryBuilder()
      .update(SigningKeyEntity)
      .set({ retiredLifetimeSeconds: () => 'greatest(retired_lifetime_seconds, :seconds)' })
      .setParameters({ seconds })
      .where('kid = :kid', { kid })
      .execute();
  }

  private withPrivateParts() {
    return this.manager.createQueryBuilder(SigningKeyEntity, 'key').addSelect(['key.privateKeyPem', 'key.privateKeyEncrypted']);
  }
}
