import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { Env } from '../config/env.js';
import type { KeyStore } from './key-store.js';
import { KeysRepository } from './keys.repository.js';
import { KeysService } from './keys.service.js';
import { newSigningKey } from './new-signing-key.js';
import { PrivateKeyVault } from './private-key-vault.js';
import type { SigningAlg } from './signing-key.entity.js';

/**
 * What only the service does to the keys when it starts (never the CLI, whatever its env):
 * protect stored private keys with KEYS_ENCRYPTION_KEY, create the first key, replace the active
 * key when SIGNING_ALG changed, and record its own token lifetime on the active key.
 */
@Injectable()
export class SigningKeyBootstrap implements OnApplicationBootstrap {
  private readonly logger = new Logger(SigningKeyBootstrap.name);

  constructor(
    private readonly repository: KeysRepository,
    private readonly vault: PrivateKeyVault,
    private readonly keys: KeysService,
    private readonly env: Env,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { sealed, created } = await this.repository.withKeyLock(async (store) => ({
      sealed: await this.protectStoredKeys(store),
      created: await this.ensureActiveKey(store),
    }));
    this.keys.forgetRing(); // a ring read before this (a listener resume) may lack the new key
    if (!this.vault.hasKek) this.logger.warn('KEYS_ENCRYPTION_KEY is not set: private signing keys are stored unencrypted');
    if (sealed > 0) this.logger.log(`encrypted ${sealed} private signing key(s) that were stored in plain text`);
    if (created) this.logger.log(`created ${created.alg} signing key ${created.kid}`);
  }

  /**
   * Proves the KEK opens every encrypted key (or fails the start naming KEYS_ENCRYPTION_KEY), and
   * with a KEK seals the keys still stored in plain text: adding the KEK later protects them too.
   */
  private async protectStoredKeys(store: KeyStore): Promise<number> {
    let sealed = 0;
    for (const key of await store.findAllWithPrivateParts()) {
      const pem = this.vault.open(key.kid, key);
      if (key.privateKeyEncrypted === null && this.vault.hasKek) {
        await store.storePrivatePart(key.kid, this.vault.store(key.kid, pem, true));
        sealed++;
      }
    }
    return sealed;
  }

  private async ensureActiveKey(store: KeyStore) {
    const active = await store.findActive();
    const lifetime = this.env.longestSignedLifetime;
    if (active?.alg === this.env.SIGNING_ALG) {
      await store.raiseRetiredLifetime(active.kid, lifetime);
      return null;
    }
    if (active) await store.retire(active.kid);
    return store.insert(await newSigningKey(this.vault, this.env.SIGNING_ALG as SigningAlg, lifetime, this.vault.hasKek));
  }
}
