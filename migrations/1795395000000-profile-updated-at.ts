import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * portal_users.profile_updated_at: when what the service tells about the user (OpenID Connect's
 * `updated_at`) last changed: their creation, or a sign-in through their identity provider that
 * brought a different profile. Existing users get their creation time.
 */
export class ProfileUpdatedAt1795395000000 implements MigrationInterface {
  name = 'ProfileUpdatedAt1795395000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE portal_users ADD COLUMN profile_updated_at timestamptz');
    await queryRunner.query('UPDATE portal_users SET profile_updated_at = created_at');
    await queryRunner.query('ALTER TABLE portal_users ALTER COLUMN profile_updated_at SET DEFAULT now(), ALTER COLUMN profile_updated_at SET NOT NULL');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE portal_users DROP COLUMN profile_updated_at');
  }
}
