/**
 * What a new grant and its first refresh token are written as, for a statement of another
 * feature that issues them together with its own change. The code redemption is such a statement
 * (authorization-codes.repository.ts, REDEEM): it spends the code and issues its grant in one
 * statement, so neither happens without the other and the row locks it takes settle its races
 * with a replay and a sign-out (revocations.ts). That statement stays with the codes, which own
 * `authorization_codes`; the part of it that writes `grants` and `refresh_tokens` is composed from
 * here, so those tables are written by grants/ only and what a grant is written as is said once.
 */

/** SQL expressions over the columns of the CTE `from` (one row per grant to issue), or parameters. */
export interface IssuedGrantSql {
  /** The CTE the grant is issued from: nothing is issued when it has no row. */
  from: string;
  id: string;
  clientId: string;
  userId: string;
  scope: string;
  flow: string;
  upstreamSessionId: string;
  authTime: string;
  sid: string;
  /** The requester's address (an `inet`, as grantAddress makes it, or NULL). */
  createdAddress: string;
  refreshTokenHash: string;
  refreshTokenLifetimeSeconds: string;
}

/** Two CTEs, `granted` (RETURNING id) and `first_refresh`, to follow the CTE `from` in a WITH list. */
export const issueGrantCtes = (grant: IssuedGrantSql) =>
  `granted AS (
     INSERT INTO grants (id, client_id, user_id, scope, flow, upstream_session_id, auth_time, sid, created_address)
     SELECT ${grant.id}, ${grant.clientId}, ${grant.userId}, ${grant.scope}, ${grant.flow}, ${grant.upstreamSessionId}, ${grant.authTime}, ${grant.sid}, ${grant.createdAddress}
     FROM ${grant.from} RETURNING id),
   first_refresh AS (
     INSERT INTO refresh_tokens (token_hash, grant_id, client_id, expires_at)
     SELECT ${grant.refreshTokenHash}, id, ${grant.clientId}, now() + make_interval(secs => ${grant.refreshTokenLifetimeSeconds}) FROM granted)`;
