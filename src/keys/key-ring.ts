import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import type { SigningAlg, SigningKeyEntity } from './signing-key.entity.js';

export interface SigningKey {
  kid: string;
  alg: SigningAlg;
  privateKey: KeyObject;
}

export interface VerificationKey {
  alg: SigningAlg;
  publicKey: KeyObject;
}

/** The published keys parsed once into KeyObjects: parsing a PEM per token would dominate signing. */
export class KeyRing {
  readonly signing: SigningKey | null;
  private readonly verification: Map<string, VerificationKey>;

  constructor(
    keys: SigningKeyEntity[],
    readonly loadedAt = Date.now(),
  ) {
    const active = keys.find((key) => key.retiredAt === null);
    this.signing = active ? { kid: active.kid, alg: active.alg, privateKey: createPrivateKey(active.privateKeyPem) } : null;
    this.verification = new Map(
      keys.map((key) => [key.kid, { alg: key.alg, publicKey: createPublicKey({ key: key.publicJwk as never, format: 'jwk' }) }]),
    );
  }

  verificationKey(kid: string): VerificationKey | undefined {
    return this.verification.get(kid);
  }
}
