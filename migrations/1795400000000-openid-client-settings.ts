import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What OpenID Connect needs to know of a client, by their registration names (RFC 7591 §2,
 * OpenID Connect Dynamic Client Registration and RP-Initiated Logout): whether it has a secret
 * (`none`: a public client, whose secret_hash is null, and only then), where logout may send the
 * browser back to, and what its ID tokens are signed with. Existing clients keep their secret and
 * get the defaults.
 */
export class OpenidClientSettings1795400000000 implements MigrationInterface {
  name = 'OpenidClientSettings1795400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE clients
         ADD COLUMN token_endpoint_auth_method text NOT NULL DEFAULT 'client_secret_basic'
           CHECK (token_endpoint_auth_method IN ('client_secret_basic', 'none')),
         ADD COLUMN post_logout_redirect_uris text[] NOT NULL DEFAULT '{}',
         ADD COLUMN id_token_signed_response_alg text NOT NULL DEFAULT 'RS256' CHECK (id_token_signed_response_alg IN ('RS256', 'ES256')),
         ALTER COLUMN secret_hash DROP NOT NULL`,
    );
    await queryRunner.query(
      `ALTER TABLE clients ADD CONSTRAINT clients_public_has_no_secret
         CHECK ((token_endpoint_auth_method = 'none') = (secret_hash IS NULL) AND (previous_secret_hash IS NULL OR secret_hash IS NOT NULL))`,
    );
  }

  /**
   * The old schema has no public clients: each gets the empty hash, which no secret matches, and
   * is disabled, since nothing there would ask it for the PKCE it relies on.
   */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE clients DROP CONSTRAINT clients_public_has_no_secret');
    await queryRunner.query(`UPDATE clients SET secret_hash = '\\x', enabled = false WHERE secret_hash IS NULL`);
    await queryRunner.query(
      `ALTER TABLE clients
         ALTER COLUMN secret_hash SET NOT NULL,
         DROP COLUMN id_token_signed_response_alg,
         DROP COLUMN post_logout_redirect_uris,
         DROP COLUMN token_endpoint_auth_method`,
    );
  }
}
