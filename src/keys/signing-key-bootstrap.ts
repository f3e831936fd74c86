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
 * protect stored private keys with KEYS_ENCRYPTION_KEY, create the first key, rotate to a key of
 * SIGNING_ALG when it changed, and record its own token lifetime on the keys that sign or will.
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
      created: await this.ensureSigningKey(store),
    }));
    this.keys.forgetRing(); // a ring read before this (a listener resume) may lack the new key
    if (!this.vault.hasKek) this.reportPlainKeys();
    if (sealed > 0) this.logger.log(`encrypted ${sealed} private signing key(s) that were stored in plain text`);
    if (created) this.logger.log(`created ${created.alg} signing key ${created.kid}, signing from ${created.activatesAt.toISOString()}`);
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
      const pem = this.vault.open(key.kid, key);
      if (key.privateKeyEncrypted === null && this.vault.hasKek) {
        await store.storePrivatePart(key.kid, this.vault.store(key.kid, pem, true));
        sealed++;
      }
    }
    return sealed;
  }

  /**
   * The first key signs at once: no token can be waiting for it. A changed SIGNING_ALG rotates
   * like keys:rotate: the new key is published first and signs after KEY_ACTIVATION_DELAY.
   */
  private async ensureSigningKey(store: KeyStore) {
    const lifetime = this.env.longestSignedLifetime;
    const alg = this.env.SIGNING_ALG as SigningAlg;
    const newest = await store.findNewest();
    if (!newest) return store.insert(await newSigningKey(this.vault, alg, lifetime, this.vault.hasKek), 0);
    await store.raiseRetiredLifetimes(lifetime);
    if (newest.alg === alg) return null;
    const pending = await store.findPending();
    if (pending) {
      this.logger.warn(`SIGNING_ALG is ${alg}, but ${pending.alg} key ${pending.kid} waits to sign from ${pending.activatesAt.toISOString()}: restart after that to replace it`);
      return null;
    }
    return (await store.rotate(newest, await newSigningKey(this.vault, alg, lifetime, this.vault.hasKek), this.env.KEY_ACTIVATION_DELAY)).key;
  }
}
