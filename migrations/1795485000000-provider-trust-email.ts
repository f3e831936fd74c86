import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Whether the service passes on a provider's `email_verified` for its brokered users
 * (`idp:create/update --trust-email`). Off for every provider, those registered before included:
 * a provider vouches for addresses under its own issuer, and the service's ID tokens and userinfo
 * would re-assert that under the service's, where a relying party may take a verified address as
 * the user's (Keycloak's per-provider "Trust Email" is off by default for this reason).
 */
export class ProviderTrustEmail1795485000000 implements MigrationInterface {
  name = 'ProviderTrustEmail1795485000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE identity_providers ADD COLUMN trust_email boolean NOT NULL DEFAULT false');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE identity_providers DROP COLUMN trust_email');
  }
}
