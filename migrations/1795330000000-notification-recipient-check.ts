import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A publish checks its recipient inside its own INSERT (a client that exists and is not
 * deleted), and clients are never removed, only tombstoned. The foreign key checked the same
 * again for every row, taking a share lock on the recipient's client row each time, which cost
 * PostgreSQL a sixth of a batch publish. Every other reference to clients keeps its key.
 */
export class NotificationRecipientCheck1795330000000 implements MigrationInterface {
  name = 'NotificationRecipientCheck1795330000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE notifications DROP CONSTRAINT notifications_recipient_fkey');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // NOT VALID first: adding it does not hold the table while every stored row is checked.
    await queryRunner.query('ALTER TABLE notifications ADD CONSTRAINT notifications_recipient_fkey FOREIGN KEY (recipient) REFERENCES clients (id) NOT VALID');
    await queryRunner.query('ALTER TABLE notifications VALIDATE CONSTRAINT notifications_recipient_fkey');
  }
}
