import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A client's own heartbeat (`client:create`/`client:update --heartbeat SECONDS`): the seconds
 * between pings on its notification streams, for links where each ping costs money. Null, as
 * every existing client gets, is the instance's WS_HEARTBEAT_INTERVAL.
 */
export class ClientHeartbeat1795460000000 implements MigrationInterface {
  name = 'ClientHeartbeat1795460000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE clients ADD COLUMN heartbeat_interval integer CHECK (heartbeat_interval BETWEEN 5 AND 3600)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE clients DROP COLUMN heartbeat_interval');
  }
}
