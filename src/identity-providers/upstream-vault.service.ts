import { Injectable } from '@nestjs/common';
import { Env } from '../config/env.js';
import { EnvelopeError, open, parseKeyEncryptionKey, seal } from '../keys/key-encryption.js';

export const UPSTREAM_NEEDS_KEK =
  'signing in through an identity provider needs KEYS_ENCRYPTION_KEY: its client secret and the tokens it issues are stored encrypted with it';

/** A sealed upstream secret that this process's KEYS_ENCRYPTION_KEY does not open. */
export class UpstreamVaultError extends Error {
  override name = 'UpstreamVaultError';
}

/**
 * Seals what the upstream providers entrust to the service (client secrets, PKCE verifiers,
 * upstream tokens) with KEYS_ENCRYPTION_KEY, in the signing keys' envelope. The context (which
 * provider, which row) is authenticated data, so a sealed value copied to another row does not open.
 */
@Injectable()
export class UpstreamVaultService {
  private readonly kek: Buffer | null;

  constructor(env: Env) {
    this.kek = env.KEYS_ENCRYPTION_KEY === undefined ? null : parseKeyEncryptionKey(env.KEYS_ENCRYPTION_KEY);
  }

  get available(): boolean {
    return this.kek !== null;
  }

  seal(context: string, plaintext: string): Buffer {
    return seal(this.requireKek(), context, plaintext);
  }

  open(context: string, sealed: Buffer): string {
    try {
      return open(this.requireKek(), context, sealed);
    } catch (error) {
      if (error instanceof EnvelopeError) throw new UpstreamVaultError('KEYS_ENCRYPTION_KEY does not open the stored identity provider secrets: it is not the key they were sealed with');
      throw error;
    }
  }

  private requireKek(): Buffer {
    if (this.kek === null) throw new UpstreamVaultError(UPSTREAM_NEEDS_KEK);
    return this.kek;
  }
}
