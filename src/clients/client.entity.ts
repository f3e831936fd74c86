import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** RFC 8628 §3.4: the device authorization grant's `grant_type`. */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

export const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials', DEVICE_CODE_GRANT] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

/** Short names an operator may type for a grant type. */
const GRANT_ALIASES: Readonly<Record<string, GrantType>> = { device_code: DEVICE_CODE_GRANT };

/** A grant type as stored: an alias becomes the full name, anything else is left for validation to judge. */
export const resolveGrantAlias = (grant: string): string => GRANT_ALIASES[grant] ?? grant;

@Entity('clients')
export class ClientEntity {
  @PrimaryColumn('text')
  id: string;

  @Column('text')
  name: string;

  @Column('text', { array: true })
  grants: GrantType[];

  @Column('text', { name: 'redirect_patterns', array: true })
  redirectPatterns: string[];

  @Column('text', { array: true })
  scopes: string[];

  /** What the approval page shows for each scope instead of its name; a scope without one is shown by name. */
  @Column('jsonb', { name: 'scope_descriptions' })
  scopeDescriptions: Record<string, string>;

  /** How its users sign in: 'local' (the service's own portal users) and/or identity provider names (src/identity-providers/). */
  @Column('text', { name: 'sign_in', array: true })
  signIn: string[];

  @Column('boolean')
  enabled: boolean;

  @Column('bytea', { name: 'secret_hash' })
  secretHash: Buffer;

  @Column('bytea', { name: 'previous_secret_hash', nullable: true })
  previousSecretHash: Buffer | null;

  @Column('timestamptz', { name: 'previous_secret_expires_at', nullable: true })
  previousSecretExpiresAt: Date | null;

  /** Set by client:delete: the row stays as a tombstone (see ClientDeletion1795310000000). */
  @Column('timestamptz', { name: 'deleted_at', nullable: true })
  deletedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
