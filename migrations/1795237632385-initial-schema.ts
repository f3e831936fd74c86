import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Clients, portal users and signing keys: the registry every later capability builds on. */
export class InitialSchema1795237632385 implements MigrationInterface {
  name = 'InitialSchema1795237632385';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE clients (
        id text PRIMARY KEY,
        name text NOT NULL,
        grants text[] NOT NULL,
        redirect_patterns text[] NOT NULL DEFAULT '{}',
        scopes text[] NOT NULL DEFAULT '{}',
        enabled boolean NOT NULL DEFAULT true,
        secret_hash bytea NOT NULL,
        previous_secret_hash bytea,
        previous_secret_expires_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`CREATE UNIQUE INDEX clients_name_key ON clients (lower(name))`);
    await queryRunner.query(`
      CREATE TABLE portal_users (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        username text NOT NULL,
        password_hash text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`CREATE UNIQUE INDEX portal_users_username_key ON portal_users (lower(username))`);
    await queryRunner.query(`
      CREATE TABLE signing_keys (
        kid text PRIMARY KEY,
        alg text NOT NULL,
        public_jwk jsonb NOT NULL,
        private_key_pem text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        retired_at timestamptz,
        expires_at timestamptz
      )`);
    // At most one key signs at a time; retired keys only verify until expires_at.
    await queryRunner.query(`CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys ((true)) WHERE retired_at IS NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE signing_keys`);
    await queryRunner.query(`DROP TABLE portal_users`);
    await queryRunner.query(`DROP TABLE clients`);
  }
}
