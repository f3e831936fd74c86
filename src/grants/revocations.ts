import { OPENID_SCOPES } from '../oauth/scope.js';

/**
 * The revocation model: what can be revoked, and the one rule every revocation follows.
 *
 * | What | Written as | Refused when issuing | Refused when used |
 * |---|---|---|---|
 * | an access token (RFC 7009) | `revoked_access_tokens` | — | bearer check, introspection |
 * | a grant (replayed code, reused or revoked refresh token, one device signed out: `grants:revoke --grant`) | `grants.revoked_at` | refresh | bearer check (`sid`), introspection |
 * | a user's sign-ins (password change, disable, sign-out of every device) | `portal_users.tokens_valid_after` moved, `disabled_at` | redemption, refresh, device poll, approval, code pick-up, browser session | through the grants revoked with it |
 * | a browser session (logout) | `browser_sessions.ended_at` | single sign-on, "Continue as USER" | — |
 * | a sign-in through a provider, waiting (at the provider, or on "Continue to CLIENT?") | the user's stamp after its start (`upstream_sign_ins.started_at`); `voided_at` on a held one | the callback, Continue | — |
 * | one client's sign-ins of a user (`grants:revoke --client`) | grants revoked, codes and approvals voided | as above, by the void marks | as above |
 * | a client (disable, delete) | `clients.enabled`, `deleted_at` | client authentication, code pick-up | bearer check |
 * | a signing key | `signing_keys.revoked_at` | signing | verification |
 * | a scope taken from a client | `clients.scopes` (never the standard OpenID scopes, every client's) | refresh and device poll issue only the client's current scopes | bearer check |
 *
 * The rule: a revocation is written to PostgreSQL first; then it holds
 * 1. **inside every issuing statement**: the statement that redeems a code, rotates a refresh
 *    token, answers a device poll, records an approval or hands over a code checks the user's
 *    status and stamp (and the void marks, the client, its scopes) itself, so nothing is issued
 *    from what a committed revocation ended;
 * 2. **at once on the instance that made it** (the in-memory sets of RevokedGrantsService, AccessTokensService
 *    and KeysService are told, and its streams closed, when the transaction commits);
 * 3. **on every other instance within one NOTIFY**, and, for notices lost while an instance's
 *    listener was down, when it listens again (the sets are re-read and every open stream's
 *    client checked again; until then the instance asks PostgreSQL instead of its sets);
 * 4. **again right after a stream registers**, for a revocation that arrived during its handshake.
 *
 * A grant is revoked only through GrantRevocationsService.revoke, whoever decides it (a sign-out,
 * one device signed out, a client's deletion, a replayed code, a reused refresh token, /sso/revoke,
 * a provider's refusal): the one statement that writes `revoked_at` and NOTIFYs, and that tells RevokedGrantsService
 * when the transaction commits.
 *
 * Races between a sign-out and an issuance are settled by row locks: a sign-out first locks the
 * user's row (it writes the stamp, or takes the row FOR UPDATE), then revokes the user's grants
 * and voids the rest; an issuing statement takes FOR SHARE the row a sign-out changes for what it
 * issues from (the user's row for a new grant, approval or code; the grant's row for a refresh,
 * which every sign-out revokes) before it writes, and PostgreSQL re-reads a row it had to wait
 * for. So either the issuance commits first and the sign-out revokes what it made, or the sign-out
 * commits first and the issuance sees the new stamp (or the revoked grant) and refuses.
 */

/**
 * A CTE named `issuable_user`: the user `userIdSql` names, locked FOR SHARE, when still enabled.
 * Issuing statements join it and compare what they issue from with its `tokens_valid_after`
 * (see `issuedAfterStampSql`); a sign-out holds the row, so the join waits for it to commit.
 */
export const issuableUserCte = (userIdSql: string) =>
  `issuable_user AS (SELECT id, tokens_valid_after FROM portal_users WHERE id = ${userIdSql} AND disabled_at IS NULL FOR SHARE)`;

/** Whether something issued at `issuedAtSql` outlives the stamp of `issuable_user` (joined as `u`). */
export const issuedAfterStampSql = (issuedAtSql: string) => `(u.tokens_valid_after IS NULL OR ${issuedAtSql} > u.tokens_valid_after)`;

/**
 * `issuedAfterStampSql` for a time read into JavaScript, which keeps whole milliseconds: the stamp
 * is one (NEW_STAMP_SQL), so a time cut to the stamp's own millisecond was at or after it.
 */
export const issuedAfterStamp = (issuedAt: Date, stamp: Date | null) => stamp === null || issuedAt.getTime() >= stamp.getTime();

/**
 * The stamp a sign-out writes: the time it takes the user's row, rounded up to the millisecond,
 * so a value read back into JavaScript (milliseconds) compares equal to the stored one.
 */
export const NEW_STAMP_SQL = `date_trunc('milliseconds', clock_timestamp()) + interval '1 millisecond'`;

/**
 * The client's current scopes as an SQL condition on a space-separated `scopeSql`: the words it
 * still holds (the standard OpenID scopes always), in order; NULL stays NULL.
 */
export const currentScopeSql = (scopeSql: string, clientIdSql: string) =>
  `(SELECT nullif(string_agg(word, ' ' ORDER BY position), '')
     FROM unnest(string_to_array(${scopeSql}, ' ')) WITH ORDINALITY AS s (word, position)
     WHERE word = ANY ((SELECT scopes FROM clients WHERE id = ${clientIdSql})::text[]) OR word IN (${OPENID_SCOPES.map((scope) => `'${scope}'`).join(', ')}))`;
