import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Every instance re-reads the recently revoked grants after each listener reconnection: an index keeps that read small. */
export class RevokedGrantsIndex1795290000000 implements MigrationInterface {
  name = 'RevokedGrantsIndex1795290000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('CREATE INDEX grants_revoked_at_idx ON grants (revoked_at) WHERE revoked_at IS NOT NULL');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX grants_revoked_at_idx');
  }
}
