import { Injectable, Logger } from '@nestjs/common';
import { notFound } from '../common/errors/app-error.js';
import type { KeyStore } from './key-store.js';
import { type KeyView, toKeyView, toNewKeyView } from './key-views.js';
import { KeysRepository } from './keys.repository.js';
import { KeysService } from './keys.service.js';
import { newSigningKey } from './new-signing-key.js';
import { PrivateKeyVault } from './private-key-vault.js';
import type { SigningKeyEntity } from './signing-key.entity.js';

type NewKeyView = ReturnType<typeof toNewKeyView>;

export interface RotateResult extends NewKeyView {
  retired: { kid: string; expires_at: string };
}

export interface RevokeResult extends KeyView {
  /** True when the key had been revoked before: nothing changed, the notice was sent again. */
  already_revoked: boolean;
  /** The key that signs from now on, when the revoked key was the active one. */
  replaced_by: NewKeyView | null;
}

/**
 * What operators do to the keys from the CLI. Explicit only: nothing here runs at start, and the
 * algorithm and lifetime of a new key are the stored ones (the service's), never the CLI's env.
 */
@Injectable()
export class KeyAdminService {
  private readonly logger = new Logger(KeyAdminService.name);

  constructor(
    private readonly repository: KeysRepository,
    private readonly vault: PrivateKeyVault,
    private readonly keys: KeysService,
  ) {}

  list(): Promise<KeyView[]> {
    return this.repository.findAllFacts().then((keys) => keys.map(toKeyView));
  }

  /** A new key of the active key's algorithm signs from now on; the old one stays published until its last token expires. */
  async rotate(): Promise<RotateResult> {
    const rotated = await this.repository.withKeyLock(async (store) => {
      const active = await store.findActive();
      if (!active) throw new Error('no active signing key to rotate: the service creates one when it starts');
      const encrypted = this.encryptsLike(active);
      const retired = await store.retire(active.kid);
      const key = await this.successorOf(store, active, encrypted);
      return { ...toNewKeyView(key), retired: { kid: retired.kid, expires_at: retired.expiresAt!.toISOString() } };
    });
    this.keys.forgetRing(); // this process signs with the new key at once; instances within their ring TTL
    return rotated;
  }

  /**
   * The emergency path after a key is stolen: it leaves the JWKS and every token it signed is
   * refused, on every instance at once (the notice is sent in the same transaction). An active key
   * is replaced in that transaction by a new one of the same algorithm. Revoking a revoked key
   * changes nothing and succeeds (the notice goes out again), so the command can simply be re-run.
   */
  async revoke(kid: string): Promise<RevokeResult> {
    // kids are JWK thumbprints (RFC 7638): anything else, NUL included, is no key, asked without a query.
    if (!/^[\x21-\x7e]{1,256}$/.test(kid)) throw notFound(`no signing key with kid ${JSON.stringify(kid)}`);
    const result = await this.repository.withKeyLock(async (store) => {
      const key = await store.findByKid(kid);
      if (!key) throw notFound(`no signing key with kid "${kid}"`);
      if (key.revokedAt) {
        await store.notifyRevoked(kid);
        return { ...toKeyView(key), already_revoked: true, replaced_by: null };
      }
      const active = key.retiredAt === null ? await store.findActive() : null;
      const encrypted = active ? this.encryptsLike(active) : false; // checked before anything changes
      const revoked = await store.revoke(kid);
      const replacement = active ? await this.successorOf(store, active, encrypted) : null;
      await store.notifyRevoked(kid);
      return { ...toKeyView(revoked), already_revoked: false, replaced_by: replacement && toNewKeyView(replacement) };
    });
    this.keys.keyRevoked(kid);
    return result;
  }

  /** Whether a new key beside `active` is sealed (see PrivateKeyVault.encryptsLike), saying so when the KEK goes unused. */
  private encryptsLike(active: SigningKeyEntity): boolean {
    const encrypted = this.vault.encryptsLike(active);
    if (!encrypted && this.vault.hasKek) {
      this.logger.warn('the stored signing keys are not encrypted yet, so the new key is not either: start the service with KEYS_ENCRYPTION_KEY to encrypt them');
    }
    return encrypted;
  }

  /** A key like `active` (algorithm, lifetime, encrypted or not) to sign in its place. */
  private async successorOf(store: KeyStore, active: SigningKeyEntity, encrypted: boolean) {
    return store.insert(await newSigningKey(this.vault, active.alg, active.retiredLifetimeSeconds, encrypted));
  }
}
