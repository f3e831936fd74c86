import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Signing keys that can be protected and revoked: the private key is stored either as PEM or,
 * with KEYS_ENCRYPTION_KEY, as an AES-256-GCM envelope (exactly one of them); each key keeps how
 * long it stays published once retired (the service's longest token lifetime when it made the
 * key, so a CLI with other settings cannot shorten it); `revoked_at` marks a key keys:revoke
 * withdrew. Existing keys get one hour, the shortest lifetime the service has ever configured
 * (user access tokens); the service raises its active key's to its own setting when it starts.
 */
export class SigningKeyEncryption1795270000000 implements MigrationInterface {
  name = 'SigningKeyEncryption1795270000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE signing_keys ALTER COLUMN private_key_pem DROP NOT NULL');
    await queryRunner.query('ALTER TABLE signing_keys ADD COLUMN private_key_encrypted bytea');
    await queryRunner.query(
      'ALTER TABLE signing_keys ADD CONSTRAINT signing_keys_one_private_key CHECK ((private_key_pem IS NULL) <> (private_key_encrypted IS NULL))',
    );
    await queryRunner.query('ALTER TABLE signing_keys ADD COLUMN retired_lifetime_seconds integer NOT NULL DEFAULT 3600');
    await queryRunner.query('ALTER TABLE signing_keys ALTER COLUMN retired_lifetime_seconds DROP DEFAULT');
    await queryRunner.query('ALTER TABLE signing_keys ADD CONSTRAINT signing_keys_retired_lifetime_positive CHECK (retired_lifetime_seconds > 0)');
    await queryRunner.query('ALTER TABLE signing_keys ADD COLUMN revoked_at timestamptz');
    // A revoked key never signs again, so it is never the active one.
    await queryRunner.query('ALTER TABLE signing_keys ADD CONSTRAINT signing_keys_revoked_is_retired CHECK (revoked_at IS NULL OR retired_at IS NOT NULL)');
  }

  /**
   * Refuses while encrypted keys exist (the old schema could only hold them in plain text, and SQL
   * cannot decrypt them). Revoked keys are deleted: the old schema would publish them again.
   */
  async down(queryRunner: QueryRunner): Promise<void> {
    const [{ encrypted }] = (await queryRunner.query('SELECT count(*)::int AS encrypted FROM signing_keys WHERE private_key_encrypted IS NOT NULL')) as {
      encrypted: number;
    }[];
    if (encrypted > 0) {
      throw new Error(`cannot undo SigningKeyEncryption: ${encrypted} private signing key(s) are encrypted with KEYS_ENCRYPTION_KEY; delete them first (every token they signed becomes invalid)`);
    }
    await queryRunner.query('DELETE FROM signing_keys WHERE revoked_at IS NOT NULL');
    await queryRunner.query('ALTER TABLE signing_keys DROP CONSTRAINT signing_keys_revoked_is_retired');
    await queryRunner.query('ALTER TABLE signing_keys DROP COLUMN revoked_at');
    await queryRunner.query('ALTER TABLE signing_keys DROP CONSTRAINT signing_keys_retired_lifetime_positive');
    await queryRunner.query('ALTER TABLE signing_keys DROP COLUMN retired_lifetime_seconds');
    await queryRunner.query('ALTER TABLE signing_keys DROP CONSTRAINT signing_keys_one_private_key');
    await queryRunner.query('ALTER TABLE signing_keys DROP COLUMN private_key_encrypted');
    await queryRunner.query('ALTER TABLE signing_keys ALTER COLUMN private_key_pem SET NOT NULL');
  }
}
