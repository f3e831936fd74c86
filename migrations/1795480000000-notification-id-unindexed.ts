import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Drops the unique index on `notifications.id`. Nothing looks a notification up by its id (the
 * stream, the history and replay go by recipient and seq, dedupe by its key), and a random uuid
 * lands each insert on another page of that index: in BENCHMARKS.md a batch of 500 dirtied 528
 * pages with it and 65 without, and wrote about a fifth less WAL per row. The id stays what a
 * publisher is answered (a random uuid, made by the database).
 */
export class NotificationIdUnindexed1795480000000 implements MigrationInterface {
  name = 'NotificationIdUnindexed1795480000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE notifications DROP CONSTRAINT notifications_id_key');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE notifications ADD CONSTRAINT notifications_id_key UNIQUE (id)');
  }
}
