import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

export const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials'] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

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

  @Column('boolean')
  enabled: boolean;

  @Column('bytea', { name: 'secret_hash' })
  secretHash: Buffer;

  @Column('bytea', { name: 'previous_secret_hash', nullable: true })
  previousSecretHash: Buffer | null;

  @Column('timestamptz', { name: 'previous_secret_expires_at', nullable: true })
  previousSecretExpiresAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
