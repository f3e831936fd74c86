import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The sign-in behind every approval of a sign-in link, for the ID tokens of the grant its code
 * becomes (OpenID Connect Core §2): when its user signed in (`auth_time`, a sign-in here or the
 * browser session they continued) and that session's `sid`. The helper's link had neither (its
 * code's issue time stood in); a standard request's code kept both inside `request`, which now
 * holds only what the request asked (scope, nonce). Codes approved before keep theirs, moved;
 * approvals still waiting for their polling device have none, and their code's issue time stands in.
 */
export class AuthorizationSignIns1795450000000 implements MigrationInterface {
  name = 'AuthorizationSignIns1795450000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE authorizations ADD COLUMN auth_time timestamptz, ADD COLUMN sid text');
    await queryRunner.query('ALTER TABLE authorization_codes ADD COLUMN auth_time timestamptz, ADD COLUMN sid text');
    await queryRunner.query(
      `UPDATE authorization_codes SET auth_time = to_timestamp((request->>'auth_time')::bigint), sid = request->>'sid', request = request - 'auth_time' - 'sid'
       WHERE request ?| array['auth_time', 'sid']`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // Back inside a standard request's code, as seconds since the epoch; the helper's codes lose theirs.
    await queryRunner.query(
      `UPDATE authorization_codes SET request = request || jsonb_build_object('auth_time', floor(extract(epoch FROM auth_time))::bigint, 'sid', sid)
       WHERE request IS NOT NULL AND auth_time IS NOT NULL AND sid IS NOT NULL`,
    );
    await queryRunner.query('ALTER TABLE authorization_codes DROP COLUMN auth_time, DROP COLUMN sid');
    await queryRunner.query('ALTER TABLE authorizations DROP COLUMN auth_time, DROP COLUMN sid');
  }
}
