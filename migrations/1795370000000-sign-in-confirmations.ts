import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A helper sign-in link that ended at an identity provider waits for the user's "Continue" on
 * the service's own page before the device gets anything: the round trip's row keeps the
 * outcome until then (the brokered user and upstream session, or the relayed token response,
 * sealed), with the hash of the one-time value the confirmation form carries.
 */
export class SignInConfirmations1795370000000 implements MigrationInterface {
  name = 'SignInConfirmations1795370000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE upstream_sign_ins
        ADD COLUMN confirmation_hash bytea UNIQUE,
        ADD COLUMN user_id uuid REFERENCES portal_users (id) ON DELETE CASCADE,
        ADD COLUMN upstream_session_id uuid REFERENCES upstream_sessions (id) ON DELETE SET NULL,
        ADD COLUMN tokens_sealed bytea,
        ADD COLUMN confirmed_at timestamptz,
        ADD CONSTRAINT upstream_sign_ins_awaiting CHECK (confirmation_hash IS NOT NULL OR (user_id IS NULL AND tokens_sealed IS NULL))`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE upstream_sign_ins DROP CONSTRAINT upstream_sign_ins_awaiting,
        DROP COLUMN confirmation_hash, DROP COLUMN user_id, DROP COLUMN upstream_session_id, DROP COLUMN tokens_sealed, DROP COLUMN confirmed_at`);
  }
}
