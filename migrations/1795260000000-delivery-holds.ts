import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Delivery cursors shared by several connections of one client: `held_seq` is the lowest
 * confirmation of a connection that closed with messages unread, where the client's next
 * connection starts. A notification's `created_at` becomes the time of its insert (after the
 * publish lock), which a starting connection compares with its own opening time.
 */
export class DeliveryHolds1795260000000 implements MigrationInterface {
  name = 'DeliveryHolds1795260000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE delivery_cursors ADD COLUMN held_seq bigint`);
    await queryRunner.query(`ALTER TABLE notifications ALTER COLUMN created_at SET DEFAULT clock_timestamp()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE notifications ALTER COLUMN created_at SET DEFAULT now()`);
    await queryRunner.query(`ALTER TABLE delivery_cursors DROP COLUMN held_seq`);
  }
}
