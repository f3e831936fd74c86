import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The sign-in behind a device code's approval form, for the ID tokens of the grant it becomes
 * (OpenID Connect Core §2): when its user signed in (`auth_time`, a password or provider sign-in
 * on the verification page, or the browser session they continued) and that session's `sid`.
 * Codes signed in before have neither: their grant's sign-in is taken to be its creation.
 */
export class DeviceCodeSignIns1795440000000 implements MigrationInterface {
  name = 'DeviceCodeSignIns1795440000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE device_codes ADD COLUMN auth_time timestamptz, ADD COLUMN sid text');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE device_codes DROP COLUMN auth_time, DROP COLUMN sid');
  }
}
