import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity('portal_users')
export class UserEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column('text')
  username: string;

  /** argon2id, PHC string format (algorithm and parameters included). */
  @Column('text', { name: 'password_hash' })
  passwordHash: string;

  /** Set by user:disable: the user cannot sign in until user:enable. */
  @Column('timestamptz', { name: 'disabled_at', nullable: true })
  disabledAt: Date | null;

  /**
   * Moved by a password change, a disable and a sign-out of every device: whatever was issued
   * before it is refused (src/token/revocations.ts). Null until first moved.
   */
  @Column('timestamptz', { name: 'tokens_valid_after', nullable: true })
  tokensValidAfter: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
