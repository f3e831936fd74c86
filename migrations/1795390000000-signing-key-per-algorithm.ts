import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The service keeps an active key of each algorithm (ES256 and RS256): at most one key per
 * algorithm is not retired, where at most one key at all was. The service creates the missing
 * key at its next start.
 */
export class SigningKeyPerAlgorithm1795390000000 implements MigrationInterface {
  name = 'SigningKeyPerAlgorithm1795390000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('CREATE UNIQUE INDEX signing_keys_one_active_per_alg ON signing_keys (alg) WHERE retired_at IS NULL');
    await queryRunner.query('DROP INDEX signing_keys_one_active');
  }

  /**
   * One key stays active, the ES256 one when there is one; the others retire as a rotation retires
   * a key, published until the tokens they signed have expired. A previous version whose
   * SIGNING_ALG is another algorithm then rotates to a key of it at its start.
   */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      UPDATE signing_keys SET retired_at = now(), expires_at = now() + make_interval(secs => retired_lifetime_seconds)
      WHERE retired_at IS NULL AND alg <> (SELECT min(alg) FROM signing_keys WHERE retired_at IS NULL)`);
    await queryRunner.query('CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys ((true)) WHERE retired_at IS NULL');
    await queryRunner.query('DROP INDEX signing_keys_one_active_per_alg');
  }
}
