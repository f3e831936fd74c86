import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

export const IDP_MODES = ['broker', 'relay'] as const;
/** broker: the service signs its own users in through the provider; relay: devices get the provider's own tokens. */
export type IdpMode = (typeof IDP_MODES)[number];

/** The name that means "the service's own portal users" among a client's sign-in methods. */
export const LOCAL_SIGN_IN = 'local';

@Entity('identity_providers')
export class IdentityProviderEntity {
  @PrimaryColumn('text')
  name: string;

  @Column('text')
  issuer: string;

  @Column('text', { name: 'client_id' })
  clientId: string;

  /** Sealed by UpstreamVaultService under the context `idp:NAME`; null for a public client (PKCE only). */
  @Column('bytea', { name: 'client_secret_sealed', nullable: true })
  clientSecretSealed: Buffer | null;

  @Column('text', { name: 'display_name' })
  displayName: string;

  @Column('text', { array: true })
  scopes: string[];

  @Column('text')
  mode: IdpMode;

  /** Broker mode: its `email_verified` is passed on to the service's ID tokens and userinfo; otherwise they say false. */
  @Column('boolean', { name: 'trust_email', default: false })
  trustEmail: boolean;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

/** The context a provider's client secret is sealed under. */
export const secretContext = (name: string) => `idp:${name}`;
