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

/** The key that signs with one algorithm, or why there is none to sign with. */
export type Signer = { key: SigningKey } | { problem: string };

/**
 * The published keys parsed once into KeyObjects: parsing a key per token would dominate signing.
 * One signer per algorithm: an algorithm is missing when no key of it signs, and holds a problem
 * instead of a key when its private part could not be read.
 */
export class KeyRing {
  private readonly verification: Map<string, VerificationKey>;

  constructor(
    published: { kid: string; alg: SigningAlg; publicJwk: JWK }[],
    /** Date.now() after which the ring is read again. */
    readonly freshUntil: number,
    private readonly signers: ReadonlyMap<SigningAlg, Signer> = new Map(),
  ) {
    this.verification = new Map(
      published.map((key) => [key.kid, { alg: key.alg, publicKey: createPublicKey({ key: key.publicJwk as never, format: 'jwk' }) }]),
    );
  }

  verificationKey(kid: string): VerificationKey | undefined {
    return this.verification.get(kid);
  }

  /** The key that signs with `alg`, or null (`signingProblem` says why). */
  signingKey(alg: SigningAlg): SigningKey | null {
    const signer = this.signers.get(alg);
    return signer && 'key' in signer ? signer.key : null;
  }

  signingProblem(alg: SigningAlg): string {
    const signer = this.signers.get(alg);
    return signer && 'problem' in signer ? signer.problem : `no active ${alg} signing key`;
  }
}
