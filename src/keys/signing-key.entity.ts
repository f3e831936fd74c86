import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import type { JWK } from 'jose';

export type SigningAlg = 'ES256' | 'RS256';

@Entity('signing_keys')
export class SigningKeyEntity {
  /** RFC 7638 thumbprint of the public key. */
  @PrimaryColumn('text')
  kid: string;

  @Column('text')
  alg: SigningAlg;

  @Column('jsonb', { name: 'public_jwk' })
  publicJwk: JWK;

  @Column('text', { name: 'private_key_pem' })
  privateKeyPem: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** Set when a newer key took over signing; the key then only verifies. */
  @Column('timestamptz', { name: 'retired_at', nullable: true })
  retiredAt: Date | null;

  /** When the last token this key signed has expired; the key leaves the JWKS then. */
  @Column('timestamptz', { name: 'expires_at', nullable: true })
  expiresAt: Date | null;
}
