import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit trail: one row per administrative change (CLI, admin API, registration), written in
 * the change's own transaction, so a change is never without its row nor a row without its change.
 * Who: an operator's OS user or a client's id. Never a secret: `details` holds names and ids only.
 * Kept AUDIT_RETENTION seconds. The indexes serve events:list's filters, newest first.
 */
export class AuditTrail1795495000000 implements MigrationInterface {
  name = 'AuditTrail1795495000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE audit_events (
        id bigserial PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now(),
        actor_kind text NOT NULL CHECK (actor_kind IN ('operator', 'client')),
        actor text NOT NULL,
        action text NOT NULL,
        client_id text,
        username text,
        target text,
        details jsonb NOT NULL DEFAULT '{}'
      )`);
    await queryRunner.query('CREATE INDEX audit_events_at ON audit_events (at)');
    await queryRunner.query('CREATE INDEX audit_events_username ON audit_events (lower(username), id) WHERE username IS NOT NULL');
    await queryRunner.query('CREATE INDEX audit_events_client ON audit_events (client_id, id) WHERE client_id IS NOT NULL');
    await queryRunner.query(`CREATE INDEX audit_events_actor_client ON audit_events (actor, id) WHERE actor_kind = 'client'`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE audit_events');
  }
}
