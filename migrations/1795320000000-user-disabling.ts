import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * user:disable: a disabled portal user cannot sign in (null: enabled). Disabling, a password
 * change and grants:revoke end a user's live grants: an index finds them without reading every grant.
 */
export class UserDisabling1795320000000 implements MigrationInterface {
  name = 'UserDisabling1795320000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE portal_users ADD COLUMN disabled_at timestamptz');
    await queryRunner.query('CREATE INDEX grants_live_user_id_idx ON grants (user_id) WHERE revoked_at IS NULL');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX grants_live_user_id_idx');
    await queryRunner.query('ALTER TABLE portal_users DROP COLUMN disabled_at');
  }
}
