import { Injectable } from '@nestjs/common';
import { Env } from '../config/env.js';
import { EnvelopeError, open, parseKeyEncryptionKey, seal } from './key-encryption.js';
import type { StoredPrivateKey } from './signing-key.entity.js';

/** A stored private key that cannot be read with this process's KEYS_ENCRYPTION_KEY (or its absence). */
export class KeyEncryptionError extends Error {
  override name = 'KeyEncryptionError';
}

export const MISSING_KEK =
  'the private signing keys are stored encrypted, but KEYS_ENCRYPTION_KEY is not set: set it to the key they were encrypted with';
export const WRONG_KEK = 'KEYS_ENCRYPTION_KEY does not decrypt the stored private signing keys: it is not the key they were encrypted with';

/** Stores private keys sealed with KEYS_ENCRYPTION_KEY when one is configured, and reads either form. */
@Injectable()
export class PrivateKeyVaultService {
  private readonly kek: Buffer | null;

  constructor(env: Env) {
    this.kek = env.KEYS_ENCRYPTION_KEY === undefined ? null : parseKeyEncryptionKey(env.KEYS_ENCRYPTION_KEY);
  }

  get hasKek(): boolean {
    return this.kek !== null;
  }

  /** The PEM of a stored key; a clear KeyEncryptionError naming the setting when it cannot be read. */
  open(kid: string, stored: StoredPrivateKey): string {
    if (stored.privateKeyEncrypted === null) return stored.privateKeyPem!;
    if (this.kek === null) throw new KeyEncryptionError(MISSING_KEK);
    try {
      return open(this.kek, kid, stored.privateKeyEncrypted);
    } catch (error) {
      if (error instanceof EnvelopeError) throw new KeyEncryptionError(WRONG_KEK);
      throw error;
    }
  }

  /** The columns for a new key: sealed when `encrypted`, which needs the KEK. */
  store(kid: string, pem: string, encrypted: boolean): StoredPrivateKey {
    if (!encrypted) return { privateKeyPem: pem, privateKeyEncrypted: null };
    if (this.kek === null) throw new KeyEncryptionError(MISSING_KEK);
    return { privateKeyPem: null, privateKeyEncrypted: seal(this.kek, kid, pem) };
  }

  /**
   * Whether a key stored beside `active` is encrypted: as `active` is. Proves the KEK opens it
   * first, so a CLI without the service's KEK, or with another one, changes nothing; and a CLI
   * with a KEK never writes a key that a service still running without one could not read.
   */
  encryptsLike(active: { kid: string } & StoredPrivateKey): boolean {
    this.open(active.kid, active);
    return active.privateKeyEncrypted !== null;
  }
}
