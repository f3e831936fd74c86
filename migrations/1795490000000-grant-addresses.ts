import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Where a grant was made from, and where it was last refreshed from, so that an operator tells a
 * user's devices apart (`grants:list`): the requester's address (TRUST_PROXY honoured) when the
 * grant was issued (`grants.created_address`), and the address of the refresh that retired each
 * refresh token (`refresh_tokens.rotated_address`, written by the statement that rotates it, as
 * `rotated_at` is). The last refresh's address is the one on the grant's latest rotated token:
 * a column on `grants` would add a write of the grant's row to every refresh, which the rotating
 * statement holds FOR SHARE. Null for grants and tokens from before this migration.
 */
export class GrantAddresses1795490000000 implements MigrationInterface {
  name = 'GrantAddresses1795490000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE grants ADD COLUMN created_address inet');
    await queryRunner.query('ALTER TABLE refresh_tokens ADD COLUMN rotated_address inet');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE refresh_tokens DROP COLUMN rotated_address');
    await queryRunner.query('ALTER TABLE grants DROP COLUMN created_address');
  }
}
