import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Signing in through the portal's identity provider (src/identity-providers/):
 * - identity_providers: the registered upstream OpenID providers, their client secret sealed
 *   with KEYS_ENCRYPTION_KEY (null for a public client);
 * - clients.sign_in: how each client's users sign in ('local' or provider names);
 * - portal_users: a brokered user is linked by (issuer, sub), has no password, and keeps the
 *   provider's profile claims;
 * - upstream_sign_ins: round trips to a provider in flight, single use, bound to a browser;
 * - upstream_sessions: a brokered sign-in's upstream refresh token (sealed), carried from the
 *   approval to its grant, for the re-check at each refresh;
 * - relay_hand_overs: a relayed sign-in's token response (sealed) until the device collects it;
 * - relayed_tokens: the relayed tokens by hash, with the client they belong to.
 */
export class IdentityProviders1795360000000 implements MigrationInterface {
  name = 'IdentityProviders1795360000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE identity_providers (
        name text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
        issuer text NOT NULL,
        client_id text NOT NULL,
        client_secret_sealed bytea,
        display_name text NOT NULL,
        scopes text[] NOT NULL,
        mode text NOT NULL CHECK (mode IN ('broker', 'relay')),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`ALTER TABLE clients ADD COLUMN sign_in text[] NOT NULL DEFAULT '{local}' CHECK (cardinality(sign_in) > 0)`);

    await queryRunner.query(`
      ALTER TABLE portal_users
        ALTER COLUMN password_hash DROP NOT NULL,
        ADD COLUMN provider text,
        ADD COLUMN upstream_issuer text,
        ADD COLUMN upstream_subject text,
        ADD COLUMN profile jsonb,
        ADD CONSTRAINT portal_users_local_or_linked CHECK ((upstream_issuer IS NULL) = (password_hash IS NOT NULL) AND (upstream_issuer IS NULL) = (upstream_subject IS NULL))`);
    await queryRunner.query('CREATE UNIQUE INDEX portal_users_upstream_key ON portal_users (upstream_issuer, upstream_subject) WHERE upstream_issuer IS NOT NULL');

    await queryRunner.query(`
      CREATE TABLE upstream_sign_ins (
        state_hash bytea PRIMARY KEY,
        provider text NOT NULL,
        browser_hash bytea NOT NULL,
        nonce text NOT NULL,
        code_verifier_sealed bytea NOT NULL,
        purpose jsonb NOT NULL,
        expires_at timestamptz NOT NULL,
        used_at timestamptz
      )`);
    await queryRunner.query('CREATE INDEX upstream_sign_ins_expires_at ON upstream_sign_ins (expires_at)');

    await queryRunner.query(`
      CREATE TABLE upstream_sessions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        provider text NOT NULL,
        user_id uuid NOT NULL REFERENCES portal_users (id) ON DELETE CASCADE,
        refresh_token_sealed bytea,
        checked_at timestamptz NOT NULL DEFAULT now(),
        checking_until timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    for (const table of ['authorizations', 'authorization_codes', 'device_codes', 'grants']) {
      await queryRunner.query(`ALTER TABLE ${table} ADD COLUMN upstream_session_id uuid REFERENCES upstream_sessions (id) ON DELETE SET NULL`);
      // For the purge of sessions nothing refers to any more (and for ON DELETE SET NULL).
      await queryRunner.query(`CREATE INDEX ${table}_upstream_session_id ON ${table} (upstream_session_id) WHERE upstream_session_id IS NOT NULL`);
    }

    // A helper state can also end cancelled at the provider (denied_at) or relayed (the provider's
    // tokens wait in relay_hand_overs): neither has a local user.
    await queryRunner.query('ALTER TABLE authorizations ALTER COLUMN user_id DROP NOT NULL, ADD COLUMN denied_at timestamptz, ADD COLUMN relayed boolean NOT NULL DEFAULT false');
    await queryRunner.query('ALTER TABLE authorizations ADD CONSTRAINT authorizations_outcome CHECK (user_id IS NOT NULL OR denied_at IS NOT NULL OR relayed)');
    // A device code decided at an identity provider has no local user: cancelled there, or relayed
    // (the provider's tokens wait in relay_hand_overs).
    // …and a relayed sign-in's approval form has its one-time value without a local user (device_codes_check1).
    await queryRunner.query('ALTER TABLE device_codes ADD COLUMN upstream_decided_at timestamptz, DROP CONSTRAINT device_codes_check, DROP CONSTRAINT device_codes_check1');
    await queryRunner.query('ALTER TABLE device_codes ADD CONSTRAINT device_codes_signed_in CHECK (signed_in_user_id IS NULL OR approval_nonce_hash IS NOT NULL)');
    await queryRunner.query(`ALTER TABLE device_codes ADD CONSTRAINT device_codes_decided_by CHECK ((status = 'pending') = (user_id IS NULL AND upstream_decided_at IS NULL))`);
    await queryRunner.query(`
      CREATE TABLE relay_hand_overs (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        client_id text NOT NULL REFERENCES clients (id),
        provider text NOT NULL,
        token_response_sealed bytea,
        state_id text UNIQUE,
        device_code_hash bytea UNIQUE,
        code_hash bytea UNIQUE,
        redirect_url text,
        code_challenge text,
        expires_at timestamptz NOT NULL,
        handed_over_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((state_id IS NULL) <> (device_code_hash IS NULL))
      )`);
    await queryRunner.query('CREATE INDEX relay_hand_overs_expires_at ON relay_hand_overs (expires_at)');
    await queryRunner.query(`
      CREATE TABLE relayed_tokens (
        token_hash bytea PRIMARY KEY,
        kind text NOT NULL CHECK (kind IN ('access_token', 'refresh_token')),
        client_id text NOT NULL REFERENCES clients (id),
        provider text NOT NULL,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query('CREATE INDEX relayed_tokens_expires_at ON relayed_tokens (expires_at)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE relayed_tokens');
    await queryRunner.query('DROP TABLE relay_hand_overs');
    await queryRunner.query(`DELETE FROM device_codes WHERE upstream_decided_at IS NOT NULL`);
    await queryRunner.query('DELETE FROM authorizations WHERE user_id IS NULL');
    await queryRunner.query('ALTER TABLE authorizations DROP CONSTRAINT authorizations_outcome, DROP COLUMN denied_at, DROP COLUMN relayed, ALTER COLUMN user_id SET NOT NULL');
    await queryRunner.query('UPDATE device_codes SET approval_nonce_hash = NULL WHERE signed_in_user_id IS NULL');
    await queryRunner.query('ALTER TABLE device_codes DROP CONSTRAINT device_codes_decided_by, DROP CONSTRAINT device_codes_signed_in, DROP COLUMN upstream_decided_at');
    await queryRunner.query('ALTER TABLE device_codes ADD CONSTRAINT device_codes_check1 CHECK ((signed_in_user_id IS NULL) = (approval_nonce_hash IS NULL))');
    await queryRunner.query(`ALTER TABLE device_codes ADD CONSTRAINT device_codes_check CHECK ((status = 'pending') = (user_id IS NULL))`);
    for (const table of ['authorizations', 'authorization_codes', 'device_codes', 'grants']) {
      await queryRunner.query(`ALTER TABLE ${table} DROP COLUMN upstream_session_id`);
    }
    await queryRunner.query('DROP TABLE upstream_sessions');
    await queryRunner.query('DROP TABLE upstream_sign_ins');
    await queryRunner.query('DELETE FROM portal_users WHERE upstream_issuer IS NOT NULL');
    await queryRunner.query(`
      ALTER TABLE portal_users
        DROP CONSTRAINT portal_users_local_or_linked,
        DROP COLUMN provider, DROP COLUMN upstream_issuer, DROP COLUMN upstream_subject, DROP COLUMN profile,
        ALTER COLUMN password_hash SET NOT NULL`);
    await queryRunner.query('ALTER TABLE clients DROP COLUMN sign_in');
    await queryRunner.query('DROP TABLE identity_providers');
  }
}
