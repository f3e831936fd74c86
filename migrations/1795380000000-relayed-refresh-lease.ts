import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * relayed_tokens:
 * - refreshing_until: a relayed refresh token is leased while its refresh waits for the provider,
 *   so two refreshes never present it there at once (a rotating provider would spend it on one
 *   and refuse the other);
 * - hand_over_id: the hand-over (relayed code or device code) the token descends from, so a
 *   relayed code presented twice ends what it gave. The hand-over row is purged once its code
 *   has expired, while its tokens live on: the link is then cleared.
 */
export class RelayedRefreshLease1795380000000 implements MigrationInterface {
  name = 'RelayedRefreshLease1795380000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE relayed_tokens ADD COLUMN refreshing_until timestamptz, ADD COLUMN hand_over_id uuid REFERENCES relay_hand_overs (id) ON DELETE SET NULL');
    await queryRunner.query('CREATE INDEX relayed_tokens_hand_over_id ON relayed_tokens (hand_over_id) WHERE hand_over_id IS NOT NULL');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX relayed_tokens_hand_over_id');
    await queryRunner.query('ALTER TABLE relayed_tokens DROP COLUMN hand_over_id, DROP COLUMN refreshing_until');
  }
}
