import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What a grant's ID tokens repeat at every refresh (OpenID Connect Core §12.2): when its user
 * signed in (`auth_time`) and the browser session that sign-in began (`sid`). Grants made before
 * have neither: their sign-in is taken to be the grant's creation, and they have no session.
 */
export class IdTokens1795430000000 implements MigrationInterface {
  name = 'IdTokens1795430000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE grants ADD COLUMN auth_time timestamptz, ADD COLUMN sid text');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE grants DROP COLUMN auth_time, DROP COLUMN sid');
  }
}
