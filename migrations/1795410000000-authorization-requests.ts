import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The standard authorization request (OpenID Connect Core §3.1.2) beside the helper's link: its
 * code keeps what the request asked (`request`: the granted scope and the nonce, which the token
 * endpoint answers with; a code with one demands the same redirect_uri at the exchange), and its
 * grant is of the flow `code`.
 */
export class AuthorizationRequests1795410000000 implements MigrationInterface {
  name = 'AuthorizationRequests1795410000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE authorization_codes ADD COLUMN request jsonb CHECK (jsonb_typeof(request) = 'object')`);
    await queryRunner.query('ALTER TABLE grants DROP CONSTRAINT grants_flow_check');
    await queryRunner.query(`ALTER TABLE grants ADD CONSTRAINT grants_flow_check CHECK (flow IN ('helper', 'device', 'code'))`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`UPDATE grants SET flow = 'helper' WHERE flow = 'code'`);
    await queryRunner.query('ALTER TABLE grants DROP CONSTRAINT grants_flow_check');
    await queryRunner.query(`ALTER TABLE grants ADD CONSTRAINT grants_flow_check CHECK (flow IN ('helper', 'device'))`);
    await queryRunner.query('ALTER TABLE authorization_codes DROP COLUMN request');
  }
}
