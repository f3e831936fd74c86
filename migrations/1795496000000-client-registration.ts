import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Clients registered from software (RFC 7591/7592): the SHA-256 of each one's registration access
 * token (it manages the client at its registration_client_uri, and nothing else), the client whose
 * `clients:register` token registered it (how many it registered lately slows a burst down), and
 * `client_secret_post` kept as registered, beside `client_secret_basic`: the service accepts both
 * from any confidential client, and a client reads back the method it asked for.
 */
export class ClientRegistration1795496000000 implements MigrationInterface {
  name = 'ClientRegistration1795496000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE clients ADD COLUMN registration_token_hash bytea, ADD COLUMN registered_by text');
    await queryRunner.query('CREATE INDEX clients_registered_by ON clients (registered_by, created_at) WHERE registered_by IS NOT NULL');
    await queryRunner.query('ALTER TABLE clients DROP CONSTRAINT clients_token_endpoint_auth_method_check');
    await queryRunner.query(
      `ALTER TABLE clients ADD CONSTRAINT clients_token_endpoint_auth_method_check CHECK (token_endpoint_auth_method IN ('client_secret_basic', 'client_secret_post', 'none'))`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`UPDATE clients SET token_endpoint_auth_method = 'client_secret_basic' WHERE token_endpoint_auth_method = 'client_secret_post'`);
    await queryRunner.query('ALTER TABLE clients DROP CONSTRAINT clients_token_endpoint_auth_method_check');
    await queryRunner.query(
      `ALTER TABLE clients ADD CONSTRAINT clients_token_endpoint_auth_method_check CHECK (token_endpoint_auth_method IN ('client_secret_basic', 'none'))`,
    );
    await queryRunner.query('DROP INDEX clients_registered_by');
    await queryRunner.query('ALTER TABLE clients DROP COLUMN registration_token_hash, DROP COLUMN registered_by');
  }
}
