import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Report notifications: the table is the truth every instance reads; `seq` is the
 * publish order; one row per (recipient, correlation id, status). A cursor per recipient remembers
 * what was pushed, so a reconnect replays only what is missing.
 */
export class Notifications1795250000000 implements MigrationInterface {
  name = 'Notifications1795250000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE notifications (
        seq bigserial PRIMARY KEY,
        id uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
        recipient text NOT NULL REFERENCES clients (id),
        correlation_id uuid NOT NULL,
        status text NOT NULL,
        payload text NOT NULL,
        published_by text,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
      )`);
    await queryRunner.query(`CREATE UNIQUE INDEX notifications_dedupe_key ON notifications (recipient, correlation_id, status)`);
    await queryRunner.query(`CREATE INDEX notifications_recipient_seq_idx ON notifications (recipient, seq)`);
    await queryRunner.query(`CREATE INDEX notifications_expires_at_idx ON notifications (expires_at)`);
    await queryRunner.query(`
      CREATE TABLE delivery_cursors (
        client_id text PRIMARY KEY REFERENCES clients (id),
        delivered_seq bigint NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE delivery_cursors`);
    await queryRunner.query(`DROP TABLE notifications`);
  }
}
