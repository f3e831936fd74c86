import { createPublicKey, type KeyObject } from 'node:crypto';
import type { JWK } from 'jose';
import type { SigningAlg } from './signing-key.entity.js';

export interface SigningKey {
  kid: string;
  alg: SigningAlg;
  privateKey: KeyObject;
}

export interface VerificationKey {
  alg: SigningAlg;
  publicKey: KeyObject;
}

/**
 * The published keys parsed once into KeyObjects: parsing a key per token would dominate signing.
 * `signing` is null when no key signs or its private part could not be read (`signingProblem` says why).
 */
export class KeyRing {
  private readonly verification: Map<string, VerificationKey>;

  constructor(
    published: { kid: string; alg: SigningAlg; publicJwk: JWK }[],
    /** Date.now() after which the ring is read again. */
    readonly freshUntil: number,
    readonly signing: SigningKey | null,
    readonly signingProblem: string | null = null,
  ) {
    this.verification = new Map(
      published.map((key) => [key.kid, { alg: key.alg, publicKey: createPublicKey({ key: key.publicJwk as never, format: 'jwk' }) }]),
    );
  }

  verificationKey(kid: string): VerificationKey | undefined {
    return this.verification.get(kid);
  }
}
