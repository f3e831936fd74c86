import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { StartupRefusal } from '../common/errors/startup-refusal.js';
import { Env } from '../config/env.js';
import type { KeyStore } from './key-store.js';
import { KeysRepository } from './keys.repository.js';
import { KeysService } from './keys.service.js';
import { newSigningKey } from './new-signing-key.js';
import { KeyEncryptionError, PrivateKeyVaultService } from './private-key-vault.service.js';
import { SIGNING_ALGS, type SigningAlg, type SigningKeyEntity } from './signing-key.entity.js';

/**
 * What only the service does to the keys when it starts (never the CLI, whatever its env):
 * protect stored private keys with KEYS_ENCRYPTION_KEY, create the first key of each algorithm
 * (a database of a version with one key gains the other), and record its own token lifetime on
 * the keys that sign or will. SIGNING_ALG only picks which of the two signs access tokens, so a
 * change of it makes no key. All under the key lock: two instances starting together make one
 * key per algorithm.
 */
@Injectable()
export class SigningKeyBootstrapService implements OnApplicationBootstrap {
  private readonly logger = new Logger(SigningKeyBootstrapService.name);

  constructor(
    private readonly repository: KeysRepository,
    private readonly vault: PrivateKeyVaultService,
    private readonly keys: KeysService,
    private readonly env: Env,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { sealed, created } = await this.repository.withKeyLock(async (store) => ({
      sealed: await this.protectStoredKeys(store),
      created: await this.ensureSigningKeys(store),
    }));
    this.keys.forgetRing(); // a ring read before this (a listener resume) may lack the new key
    if (!this.vault.hasKek) this.reportPlainKeys();
    if (sealed > 0) this.logger.log(`encrypted ${sealed} private signing key(s) that were stored in plain text`);
    for (const key of created) this.logger.log(`created ${key.alg} signing key ${key.kid}, signing from ${key.activatesAt.toISOString()}`);
  }

  /** On a machine for trying the service out, keys in plain text are expected: a fact, not a warning. */
  private reportPlainKeys(): void {
    const fact = 'KEYS_ENCRYPTION_KEY is not set: private signing keys are stored unencrypted';
    if (this.env.APP_ENV === 'development') this.logger.log(`${fact} (fine for development; APP_ENV=production requires it)`);
    else this.logger.warn(fact);
  }

  /**
   * Proves the KEK opens every encrypted key (or fails the start naming KEYS_ENCRYPTION_KEY), and
   * with a KEK seals the keys still stored in plain text: adding the KEK later protects them too.
   */
  private async protectStoredKeys(store: KeyStore): Promise<number> {
    let sealed = 0;
    for (const key of await store.findAllWithPrivateParts()) {
      const pem = this.openAtStart(key);
      if (key.privateKeyEncrypted === null && this.vault.hasKek) {
        await store.storePrivatePart(key.kid, this.vault.store(key.kid, pem, true));
        sealed++;
      }
    }
    return sealed;
  }

  /** A stored key's PEM; a KEK that cannot open it stops the start in one line (the message names the setting). */
  private openAtStart(key: SigningKeyEntity): string {
    try {
      return this.vault.open(key.kid, key);
    } catch (error) {
      throw error instanceof KeyEncryptionError ? new StartupRefusal(error.message) : error;
    }
  }

  /**
   * The first key of an algorithm signs at once: no token of that algorithm can be waiting for it.
   * A new key is sealed when this instance has a KEK (the stored keys are sealed by then too).
   */
  private async ensureSigningKeys(store: KeyStore): Promise<SigningKeyEntity[]> {
    const lifetime = this.env.longestSignedLifetime;
    await store.raiseRetiredLifetimes(lifetime);
    const missing: SigningAlg[] = [];
    for (const alg of SIGNING_ALGS) {
      if (await store.findNewest(alg)) continue;
      // A previous version's change of SIGNING_ALG set this key's retirement, for a key of the
      // other algorithm to take over: each algorithm keeps its own key now, so it signs on.
      const signing = await store.findSigning(alg);
      if (signing) await store.keepSigning(signing.kid);
      else missing.push(alg);
    }
    // RSA keys take tens of milliseconds to make: make them together.
    const made = await Promise.all(missing.map((alg) => newSigningKey(this.vault, alg, lifetime, this.vault.hasKek)));
    const created = [];
    for (const key of made) created.push(await store.insert(key, 0));
    return created;
  }
}
