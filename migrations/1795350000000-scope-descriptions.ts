import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What the approval page shows for each scope a client may ask for, set by an operator
 * (client:create --scope-description): an object from scope to text; a scope without one is shown by name.
 */
export class ScopeDescriptions1795350000000 implements MigrationInterface {
  name = 'ScopeDescriptions1795350000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE clients ADD COLUMN scope_descriptions jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(scope_descriptions) = 'object')`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE clients DROP COLUMN scope_descriptions');
  }
}
