import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A sign-in through a provider under the revocation model (src/token/revocations.ts): it counts
 * from when its round trip started (`started_at`; rows in flight now take the migration's time),
 * so a user's sign-out after that voids it, at the callback and at "Continue to CLIENT?"; and a
 * held confirmation a sign-out reached is marked void (`voided_at`), as approvals and device
 * codes are, which also covers a sign-out of one client (`grants:revoke --client`).
 */
export class UpstreamSignInVoids1795484000000 implements MigrationInterface {
  name = 'UpstreamSignInVoids1795484000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE upstream_sign_ins ADD COLUMN started_at timestamptz NOT NULL DEFAULT now(), ADD COLUMN voided_at timestamptz');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE upstream_sign_ins DROP COLUMN started_at, DROP COLUMN voided_at');
  }
}
