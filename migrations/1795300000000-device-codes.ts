import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The standard device flow (RFC 8628): one row per device authorization, found by the device
 * code's hash (the device polls with it) or by the user code (the user types it). Its polling
 * interval is stored with it, so `slow_down` grows it on every instance alike. The user who
 * signed in on the verification page is kept with the hash of the one-time value their approval
 * form carries, so only that form can decide. Grants remember which flow began them, because the
 * device flow's token responses follow RFC 6749 §5.1 (no `scope: null`).
 */
export class DeviceCodes1795300000000 implements MigrationInterface {
  name = 'DeviceCodes1795300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE device_codes (
        device_code_hash bytea PRIMARY KEY,
        user_code text NOT NULL UNIQUE CHECK (user_code ~ '^[BCDFGHJKLMNPQRSTVWXZ]{8}$'),
        client_id text NOT NULL REFERENCES clients (id),
        scope text,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied')),
        signed_in_user_id uuid REFERENCES portal_users (id),
        approval_nonce_hash bytea,
        user_id uuid REFERENCES portal_users (id),
        interval_seconds integer NOT NULL CHECK (interval_seconds > 0),
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        last_polled_at timestamptz,
        decided_at timestamptz,
        consumed_at timestamptz,
        CHECK ((status = 'pending') = (user_id IS NULL)),
        CHECK ((signed_in_user_id IS NULL) = (approval_nonce_hash IS NULL))
      )`);
    await queryRunner.query('CREATE INDEX device_codes_expires_at_idx ON device_codes (expires_at)');
    await queryRunner.query(`ALTER TABLE grants ADD COLUMN flow text NOT NULL DEFAULT 'helper' CHECK (flow IN ('helper', 'device'))`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE grants DROP COLUMN flow');
    await queryRunner.query('DROP TABLE device_codes');
  }
}
