import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Key rotation publishes before it signs: `activates_at` is when a key starts signing (by
 * PostgreSQL's clock), and the key it replaces keeps signing until then (its `retired_at`, set
 * ahead). Existing keys signed from their creation. The default keeps an instance of the previous
 * version, which inserts keys without it, signing at once as it did.
 */
export class SigningKeyActivation1795340000000 implements MigrationInterface {
  name = 'SigningKeyActivation1795340000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE signing_keys ADD COLUMN activates_at timestamptz');
    await queryRunner.query('UPDATE signing_keys SET activates_at = created_at');
    await queryRunner.query('ALTER TABLE signing_keys ALTER COLUMN activates_at SET NOT NULL');
    await queryRunner.query('ALTER TABLE signing_keys ALTER COLUMN activates_at SET DEFAULT now()');
  }

  /** A key still waiting then signs at once: the previous schema signs with the key whose retired_at is null. */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE signing_keys DROP COLUMN activates_at');
  }
}
