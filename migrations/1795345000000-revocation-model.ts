import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The revocation model (src/token/revocations.ts): a user's `tokens_valid_after` stamp (null:
 * never moved), moved by a password change, a disable and a sign-out of every device, ends every
 * grant, code and approval issued before it; issuing statements compare against it under a share
 * lock on the user's row. An approval (the sign-in of a state) or a device authorization that a
 * sign-out voided keeps its row, marked void, until it expires: the approval's row is what makes
 * its state single use, so it must outlive the state (its expiry was moved to "now" before, and
 * the purge then made the state usable again).
 */
export class RevocationModel1795345000000 implements MigrationInterface {
  name = 'RevocationModel1795345000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE portal_users ADD COLUMN tokens_valid_after timestamptz');
    await queryRunner.query('ALTER TABLE authorizations ADD COLUMN voided_at timestamptz');
    await queryRunner.query('ALTER TABLE device_codes ADD COLUMN voided_at timestamptz');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE device_codes DROP COLUMN voided_at');
    await queryRunner.query('ALTER TABLE authorizations DROP COLUMN voided_at');
    await queryRunner.query('ALTER TABLE portal_users DROP COLUMN tokens_valid_after');
  }
}
