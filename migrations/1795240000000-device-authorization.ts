import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Device authorization helper and SSO tokens: approved sign-ins, authorization codes, grants
 * (token families), refresh tokens, revoked access tokens and failed-login counters.
 * Codes and refresh tokens are stored as SHA-256 hashes only.
 */
export class DeviceAuthorization1795240000000 implements MigrationInterface {
  name = 'DeviceAuthorization1795240000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE grants (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        client_id text NOT NULL REFERENCES clients (id),
        user_id uuid NOT NULL REFERENCES portal_users (id),
        scope text,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
    // One row per state that completed a sign-in: a state is single use.
    await queryRunner.query(`
      CREATE TABLE authorizations (
        state_id text PRIMARY KEY,
        client_id text NOT NULL REFERENCES clients (id),
        user_id uuid NOT NULL REFERENCES portal_users (id),
        redirect_url text,
        code_challenge text,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        picked_up_at timestamptz
      )`);
    await queryRunner.query(`
      CREATE TABLE authorization_codes (
        code_hash bytea PRIMARY KEY,
        state_id text NOT NULL,
        client_id text NOT NULL REFERENCES clients (id),
        user_id uuid NOT NULL REFERENCES portal_users (id),
        redirect_url text,
        code_challenge text,
        issued_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        consumed_at timestamptz,
        grant_id uuid REFERENCES grants (id) ON DELETE SET NULL
      )`);
    await queryRunner.query(`
      CREATE TABLE refresh_tokens (
        token_hash bytea PRIMARY KEY,
        grant_id uuid NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
        client_id text NOT NULL REFERENCES clients (id),
        issued_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        rotated_at timestamptz
      )`);
    await queryRunner.query(`CREATE INDEX refresh_tokens_grant_id_idx ON refresh_tokens (grant_id)`);
    await queryRunner.query(`
      CREATE TABLE revoked_access_tokens (
        jti text PRIMARY KEY,
        expires_at timestamptz NOT NULL
      )`);
    await queryRunner.query(`
      CREATE TABLE login_failures (
        key text PRIMARY KEY,
        failures integer NOT NULL,
        last_failure_at timestamptz NOT NULL
      )`);
    // Housekeeping deletes by expiry.
    for (const table of ['authorizations', 'authorization_codes', 'refresh_tokens', 'revoked_access_tokens']) {
      await queryRunner.query(`CREATE INDEX ${table}_expires_at_idx ON ${table} (expires_at)`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['login_failures', 'revoked_access_tokens', 'refresh_tokens', 'authorization_codes', 'authorizations', 'grants']) {
      await queryRunner.query(`DROP TABLE ${table}`);
    }
  }
}
