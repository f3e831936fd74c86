import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What a resuming connection (protocol v2, server-sent events) needs to know whether its history
 * is complete:
 * - `notification_epoch`: one random value, made when this database is made. A database restored
 *   from elsewhere or created afresh has another (or, restored from a dump of this one, seqs the
 *   client has seen but the database has not): either way the client's position means nothing here.
 * - `notification_expiries`: per recipient, the highest seq retention has deleted, so a client
 *   resuming below it learns that part of what it missed is gone.
 */
export class StreamResume1795470000000 implements MigrationInterface {
  name = 'StreamResume1795470000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE notification_epoch (
        only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
        epoch text NOT NULL DEFAULT replace(gen_random_uuid()::text, '-', '')
      )`);
    await queryRunner.query('INSERT INTO notification_epoch DEFAULT VALUES');
    await queryRunner.query(`
      CREATE TABLE notification_expiries (
        client_id text PRIMARY KEY REFERENCES clients (id),
        expired_through_seq bigint NOT NULL
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE notification_expiries');
    await queryRunner.query('DROP TABLE notification_epoch');
  }
}
