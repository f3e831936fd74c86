import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import type { JWK } from 'jose';

/** The algorithms the service signs with: it keeps an active key of each (see SigningKeyBootstrapService). */
export const SIGNING_ALGS = ['ES256', 'RS256'] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];

/**
 * A signing key. The private part is never selected unless a query asks for it by name
 * (`select: false`): the JWKS, key listings and most lookups cannot leak what they never read.
 */
@Entity('signing_keys')
export class SigningKeyEntity {
  /** RFC 7638 thumbprint of the public key. */
  @PrimaryColumn('text')
  kid: string;

  @Column('text')
  alg: SigningAlg;

  @Column('jsonb', { name: 'public_jwk' })
  publicJwk: JWK;

  /** PKCS#8 PEM, only while no KEYS_ENCRYPTION_KEY is configured; exactly one of the two private columns is set. */
  @Column('text', { name: 'private_key_pem', nullable: true, select: false })
  privateKeyPem: string | null;

  /** The PEM sealed with KEYS_ENCRYPTION_KEY (see key-encryption.ts). */
  @Column('bytea', { name: 'private_key_encrypted', nullable: true, select: false })
  privateKeyEncrypted: Buffer | null;

  /** How long the key stays published once retired: the longest lifetime of what it signs. */
  @Column('integer', { name: 'retired_lifetime_seconds' })
  retiredLifetimeSeconds: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** When the key starts signing: a rotated-in key is published for KEY_ACTIVATION_DELAY first. */
  @Column('timestamptz', { name: 'activates_at' })
  activatesAt: Date;

  /** When a newer key takes (or took) over signing; the key then only verifies. Set ahead by a rotation. */
  @Column('timestamptz', { name: 'retired_at', nullable: true })
  retiredAt: Date | null;

  /** When the last token this key signed has expired; the key leaves the JWKS then. */
  @Column('timestamptz', { name: 'expires_at', nullable: true })
  expiresAt: Date | null;

  /** Set by keys:revoke: the key left the JWKS at once and nothing it signed is accepted any more. */
  @Column('timestamptz', { name: 'revoked_at', nullable: true })
  revokedAt: Date | null;
}

/** Where a key's private part is stored: exactly one of the two is set. */
export type StoredPrivateKey = Pick<SigningKeyEntity, 'privateKeyPem' | 'privateKeyEncrypted'>;
