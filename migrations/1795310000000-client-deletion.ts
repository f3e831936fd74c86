import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * client:delete keeps a tombstone instead of the row going away: grants, codes, refresh tokens,
 * notifications and cursors reference clients, and the revoked grants must outlive the client
 * until its last access token has expired (every instance re-reads them after a reconnection).
 * A deleted client's name is free again, so the unique index only covers live clients.
 */
export class ClientDeletion1795310000000 implements MigrationInterface {
  name = 'ClientDeletion1795310000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE clients ADD COLUMN deleted_at timestamptz');
    // A tombstone can never be enabled again.
    await queryRunner.query('ALTER TABLE clients ADD CONSTRAINT clients_deleted_is_disabled CHECK (deleted_at IS NULL OR NOT enabled)');
    await queryRunner.query('DROP INDEX clients_name_key');
    await queryRunner.query('CREATE UNIQUE INDEX clients_name_key ON clients (lower(name)) WHERE deleted_at IS NULL');
  }

  /** The old schema has no tombstones: deleted clients' names are made unique before its index returns. */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`UPDATE clients SET name = name || ' (deleted ' || id || ')' WHERE deleted_at IS NOT NULL`);
    await queryRunner.query('DROP INDEX clients_name_key');
    await queryRunner.query('CREATE UNIQUE INDEX clients_name_key ON clients (lower(name))');
    await queryRunner.query('ALTER TABLE clients DROP CONSTRAINT clients_deleted_is_disabled');
    await queryRunner.query('ALTER TABLE clients DROP COLUMN deleted_at');
  }
}
