import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The login slow-down counts (username, address) pairs beside usernames and addresses, under
 * hashed keys, and stores until when each key refuses attempts, so that counting an attempt is
 * one conditional upsert instead of a check under an advisory lock. Counters in the old key
 * format are dropped (they lapse within fifteen minutes anyway).
 */
export class LoginThrottleKeys1795280000000 implements MigrationInterface {
  name = 'LoginThrottleKeys1795280000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DELETE FROM login_failures');
    await queryRunner.query('ALTER TABLE login_failures ADD COLUMN blocked_until timestamptz NOT NULL DEFAULT now()');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DELETE FROM login_failures');
    await queryRunner.query('ALTER TABLE login_failures DROP COLUMN blocked_until');
  }
}
