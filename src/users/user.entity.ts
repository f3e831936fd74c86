import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

export interface UpstreamProfile {
  preferred_username?: string;
  name?: string;
  email?: string;
  email_verified?: boolean;
}

@Entity('portal_users')
export class UserEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column('text')
  username: string;

  /** argon2id, PHC string format (algorithm and parameters included); null for a user brokered from an identity provider. */
  @Column('text', { name: 'password_hash', nullable: true })
  passwordHash: string | null;

  /** The identity provider a brokered user signs in with (its registered name), or null for a local user. */
  @Column('text', { nullable: true })
  provider: string | null;

  /** A brokered user is the provider's (issuer, sub): never linked by e-mail. */
  @Column('text', { name: 'upstream_issuer', nullable: true })
  upstreamIssuer: string | null;

  @Column('text', { name: 'upstream_subject', nullable: true })
  upstreamSubject: string | null;

  /** The provider's profile claims as of the last sign-in (preferred_username, name, email, email_verified). */
  @Column('jsonb', { nullable: true })
  profile: UpstreamProfile | null;

  /** Set by user:disable: the user cannot sign in until user:enable. */
  @Column('timestamptz', { name: 'disabled_at', nullable: true })
  disabledAt: Date | null;

  /**
   * Moved by a password change, a disable and a sign-out of every device: whatever was issued
   * before it is refused (src/grants/revocations.ts). Null until first moved.
   */
  @Column('timestamptz', { name: 'tokens_valid_after', nullable: true })
  tokensValidAfter: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** When the profile claims (OpenID Connect's `updated_at`) last changed: creation, or a provider's sign-in with a different profile. */
  @Column('timestamptz', { name: 'profile_updated_at', default: () => 'now()' })
  profileUpdatedAt: Date;
}

/** What pages call a user: a brokered user's name at their provider, else the username. */
export const displayNameOf = (user: Pick<UserEntity, 'username' | 'profile'>): string =>
  user.profile?.preferred_username ?? user.profile?.name ?? user.profile?.email ?? user.username;
