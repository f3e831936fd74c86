import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * browser_sessions: a browser's sign-in at the service (single sign-on), found by the hash of its
 * cookie. It lives SESSION_TTL, and ends at logout (`ended_at`) or with every sign-out of its user
 * (the user's tokens_valid_after passing its `auth_time`, as for everything else issued to them).
 * Its public `sid` goes into ID tokens (OpenID Connect Front-/Back-Channel Logout's session id).
 */
export class BrowserSessions1795420000000 implements MigrationInterface {
  name = 'BrowserSessions1795420000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE browser_sessions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        secret_hash bytea NOT NULL UNIQUE,
        sid text NOT NULL UNIQUE,
        user_id uuid NOT NULL REFERENCES portal_users (id) ON DELETE CASCADE,
        upstream_session_id uuid REFERENCES upstream_sessions (id) ON DELETE SET NULL,
        auth_time timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        ended_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query('CREATE INDEX browser_sessions_expires_at ON browser_sessions (expires_at)');
    await queryRunner.query('CREATE INDEX browser_sessions_user_id ON browser_sessions (user_id)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE browser_sessions');
  }
}
