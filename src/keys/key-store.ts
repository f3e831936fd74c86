import type { EntityManager } from 'typeorm';
import type { GeneratedKey } from './key-pair.js';
import { type SigningAlg, SigningKeyEntity, type StoredPrivateKey } from './signing-key.entity.js';

/** Every instance LISTENs here; the payload is the revoked kid. */
export const KEY_REVOKED_CHANNEL = 'vc_key_revoked';
/** Every instance LISTENs here too; the payload is the kid a rotation published. */
export const KEY_ROTATED_CHANNEL = 'vc_key_rotated';

/**
 * The keys that sign at PostgreSQL's `now()`: those whose window [activates_at, retired_at) holds
 * it. Each algorithm has its own line of keys, and a rotation ends the old key's window where the
 * new one's (of the same algorithm) begins, so there is one per algorithm.
 */
export const SIGNS_NOW = 'revoked_at IS NULL AND activates_at <= now() AND (retired_at IS NULL OR retired_at > now())';

/** `delay` seconds from now, by PostgreSQL's clock like every expiry. */
const AFTER_DELAY = 'now() + make_interval(secs => :delay)';
/** When a key retired at `at` stops being published: once the last token it signed has expired. */
const expiryAfter = (at: string) => `${at} + make_interval(secs => retired_lifetime_seconds)`;

/** A key loaded with its private columns (they are `select: false` otherwise). */
export type KeyWithPrivatePart = SigningKeyEntity;

export interface NewKey extends Omit<GeneratedKey, 'privateKeyPem'>, StoredPrivateKey {
  retiredLifetimeSeconds: number;
}

/** Key queries inside the transaction that holds the key lock. */
export class KeyStore {
  constructor(private readonly manager: EntityManager) {}

  /** The key of `alg` that signs now, private part included. */
  findSigning(alg: SigningAlg): Promise<KeyWithPrivatePart | null> {
    return this.withPrivateParts().where(SIGNS_NOW).andWhere('key.alg = :alg', { alg }).getOne();
  }

  /** The newest key of `alg`, private part included: the one signing, or the one waiting to. A rotation follows it. */
  findNewest(alg: SigningAlg): Promise<KeyWithPrivatePart | null> {
    return this.withPrivateParts().where('key.retired_at IS NULL AND key.alg = :alg', { alg }).getOne();
  }

  /** The key of `alg` a rotation published that does not sign yet (at most one per algorithm: see KeyAdminService.rotate). */
  findPending(alg: SigningAlg): Promise<SigningKeyEntity | null> {
    return this.manager
      .createQueryBuilder(SigningKeyEntity, 'key')
      .where('key.revoked_at IS NULL AND key.activates_at > now() AND key.alg = :alg', { alg })
      .getOne();
  }

  /** Every key, private parts included (to check or seal them at start). */
  findAllWithPrivateParts(): Promise<KeyWithPrivatePart[]> {
    return this.withPrivateParts().getMany();
  }

  /** One key without its private part, locked against a concurrent change. */
  findByKid(kid: string): Promise<SigningKeyEntity | null> {
    return this.manager.findOne(SigningKeyEntity, { where: { kid }, lock: { mode: 'pessimistic_write' } });
  }

  /** A key that signs `delaySeconds` from now; published (in the JWKS) at once. */
  async insert(key: NewKey, delaySeconds: number): Promise<SigningKeyEntity> {
    await this.manager
      .createQueryBuilder()
      .insert()
      .into(SigningKeyEntity)
      .values({ ...key, activatesAt: () => AFTER_DELAY, retiredAt: null, expiresAt: null, revokedAt: null })
      .setParameters({ delay: delaySeconds })
      .execute();
    return this.manager.findOneByOrFail(SigningKeyEntity, { kid: key.kid });
  }

  /**
   * `key` takes over from `newest` in `delaySeconds`: published now, signing from then on, while
   * `newest` signs until then and stays published for its stored lifetime after. Every instance
   * is told when the transaction commits.
   */
  async rotate(newest: SigningKeyEntity, key: NewKey, delaySeconds: number): Promise<{ key: SigningKeyEntity; retired: SigningKeyEntity }> {
    const retired = await this.retire(newest.kid, delaySeconds);
    const inserted = await this.insert(key, delaySeconds); // the same now(): its window starts where the old one's ends
    await this.manager.query('SELECT pg_notify($1, $2)', [KEY_ROTATED_CHANNEL, inserted.kid]);
    return { key: inserted, retired };
  }

  /** Withdraws the key: its signing ends now if it had not, and `expires_at` stays the end of its tokens' lifetime. */
  async revoke(kid: string): Promise<SigningKeyEntity> {
    // least() skips nulls: a key still signing, or waiting to, gets now().
    await this.manager
      .createQueryBuilder()
      .update(SigningKeyEntity)
      .set({ revokedAt: () => 'now()', retiredAt: () => 'least(retired_at, now())', expiresAt: () => `least(expires_at, ${expiryAfter('now()')})` })
      .where('kid = :kid', { kid })
      .execute();
    return this.manager.findOneByOrFail(SigningKeyEntity, { kid });
  }

  /** The pending key signs from now on: the key it was to replace was revoked. */
  async activateNow(kid: string): Promise<SigningKeyEntity> {
    await this.manager.createQueryBuilder().update(SigningKeyEntity).set({ activatesAt: () => 'now()' }).where('kid = :kid', { kid }).execute();
    return this.manager.findOneByOrFail(SigningKeyEntity, { kid });
  }

  /**
   * The key signs on with no end: the key that was to replace it was revoked before it signed, or
   * (a previous version's change of SIGNING_ALG) was of another algorithm, which has its own line now.
   */
  async keepSigning(kid: string): Promise<void> {
    await this.manager.update(SigningKeyEntity, { kid }, { retiredAt: null, expiresAt: null });
  }

  /** Delivered to every instance when the transaction commits, and only then. */
  async notifyRevoked(kid: string): Promise<void> {
    await this.manager.query('SELECT pg_notify($1, $2)', [KEY_REVOKED_CHANNEL, kid]);
  }

  async storePrivatePart(kid: string, stored: StoredPrivateKey): Promise<void> {
    await this.manager.update(SigningKeyEntity, { kid }, stored);
  }

  /**
   * Raises the stored lifetime of the keys that sign or will sign, never lowering it: tokens
   * already signed under a longer setting must stay verifiable. A key whose retirement is set
   * ahead (it signs until a rotated-in key activates) has its expiry moved with it.
   */
  async raiseRetiredLifetimes(seconds: number): Promise<void> {
    await this.manager
      .createQueryBuilder()
      .update(SigningKeyEntity)
      .set({
        retiredLifetimeSeconds: () => 'greatest(retired_lifetime_seconds, :seconds)',
        expiresAt: () => 'retired_at + make_interval(secs => greatest(retired_lifetime_seconds, :seconds))',
      })
      .setParameters({ seconds })
      .where('revoked_at IS NULL AND (retired_at IS NULL OR retired_at > now())')
      .execute();
  }

  /** Stops the key signing `delaySeconds` from now; it stays published for its stored lifetime after that. */
  private async retire(kid: string, delaySeconds: number): Promise<SigningKeyEntity> {
    await this.manager
      .createQueryBuilder()
      .update(SigningKeyEntity)
      .set({ retiredAt: () => AFTER_DELAY, expiresAt: () => expiryAfter(AFTER_DELAY) })
      .setParameters({ delay: delaySeconds })
      .where('kid = :kid', { kid })
      .execute();
    return this.manager.findOneByOrFail(SigningKeyEntity, { kid });
  }

  private withPrivateParts() {
    return this.manager.createQueryBuilder(SigningKeyEntity, 'key').addSelect(['key.privateKeyPem', 'key.privateKeyEncrypted']);
  }
}
