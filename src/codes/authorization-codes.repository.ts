import { Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { notifiedIdPayloadSql } from '../database/notified-id-set.js';
import { PreparedStatement } from '../database/prepared-statement.js';
import { grantAddress } from '../grants/grant-address.js';
import { issueGrantCtes } from '../grants/grant-issuing-ctes.js';
import { type IdTokenFacts, idTokenFactsSql } from '../token/id-tokens.service.js';
import { issuableUserCte, issuedAfterStampSql } from '../grants/revocations.js';

export interface AuthorizationCodeRow {
  client_id: string;
  user_id: string;
  redirect_url: string | null;
  code_challenge: string | null;
  expired: boolean;
  consumed_at: Date | null;
  grant_id: string | null;
  upstream_session_id: string | null;
  request: CodeRequest | null;
  issued_at: Date;
  /** The sign-in behind the code; null for codes approved before it was kept (their issue time stands in). */
  auth_time: Date | null;
  sid: string | null;
  /** The code's user may still be issued tokens from it (enabled, not signed out since the code). */
  user_issuable: boolean;
}

/**
 * What a standard authorization request's code carries to the token endpoint: the scope granted
 * and the nonce (OpenID Connect Core §3.1.2.1). Null for the helper's link, whose scope comes with
 * the token request.
 */
export interface CodeRequest {
  scope: string | null;
  nonce?: string;
}

/**
 * The sign-in behind an approval, whichever link it answered (OpenID Connect Core §2): when its
 * user signed in (here, or in the browser session they continued) and that session's public id,
 * for the ID tokens' `auth_time` and `sid`.
 */
export interface CodeSignIn {
  authTime: Date;
  sid: string;
}

export interface NewAuthorizationCode {
  codeHash: Buffer;
  stateId: string;
  clientId: string;
  userId: string;
  redirectUrl: string | null;
  codeChallenge: string | null;
  upstreamSessionId: string | null;
  request: CodeRequest | null;
  signIn: CodeSignIn;
  lifetimeSeconds: number;
}

/** A completed sign-in, keyed by the state that started it. */
export interface Approval {
  stateId: string;
  clientId: string;
  userId: string;
  redirectUrl: string | null;
  codeChallenge: string | null;
  stateExpiresAt: Date;
  /** The user's tokens_valid_after as read when their password was checked: a sign-out since then refuses the approval. */
  userStamp: Date | null;
  /** A brokered sign-in's link to its provider (upstream_sessions), passed on to the grant for the re-check at refresh. */
  upstreamSessionId: string | null;
  /** A standard authorization request's own asks, for its code (null: the helper's link). */
  request: CodeRequest | null;
  signIn: CodeSignIn;
}

/** A sign-in link cancelled at the identity provider: spent, and its polling device is answered access_denied. */
export interface Denial {
  stateId: string;
  clientId: string;
  redirectUrl: string | null;
  stateExpiresAt: Date;
}

/** NOTIFY channel announcing a state whose code now waits for its polling device (a NotifiedIdSet). */
export const STATE_APPROVED_CHANNEL = 'vc_state_approved';

/** A redeemed code: its request, and what the grant's ID token says, read in the redeeming statement. */
export type RedeemedCode = Omit<IdTokenFacts, 'alg'> & { request: CodeRequest | null };

/**
 * The code redemption, one statement: spends the code and issues its grant and first refresh
 * token (written as grants/ says, grant-issuing-ctes.ts), or does neither.
 */
const REDEEM = new PreparedStatement<RedeemedCode>(
  'redeem-authorization-code',
  `WITH ${issuableUserCte('(SELECT user_id FROM authorization_codes WHERE code_hash = $1)')},
   redeemed AS (
     UPDATE authorization_codes c SET consumed_at = now(), grant_id = $5
     FROM issuable_user u
     WHERE c.code_hash = $1 AND c.client_id = $2 AND c.consumed_at IS NULL AND c.expires_at > now()
       AND c.code_challenge IS NOT DISTINCT FROM $3
       -- A standard request's code demands its redirect_uri again (RFC 6749 §4.1.3); the helper's may omit it.
       AND (CASE WHEN c.request IS NULL THEN $4::text IS NULL OR c.redirect_url = $4 ELSE c.redirect_url = $4 END)
       AND u.id = c.user_id AND ${issuedAfterStampSql('c.issued_at')}
     RETURNING c.user_id, c.upstream_session_id, c.request, c.issued_at, c.auth_time, c.sid),
   ${issueGrantCtes({
     from: 'redeemed',
     id: '$5',
     clientId: '$2',
     userId: 'user_id',
     scope: "CASE WHEN request IS NULL THEN $6 ELSE request->>'scope' END",
     flow: "CASE WHEN request IS NULL THEN 'helper' ELSE 'code' END",
     upstreamSessionId: 'upstream_session_id',
     // A code approved before its sign-in was kept: issued at that sign-in, or moments after it.
     authTime: 'COALESCE(auth_time, issued_at)',
     sid: 'sid',
     createdAddress: '$9::inet',
     refreshTokenHash: '$7',
     refreshTokenLifetimeSeconds: '$8',
   })}
   SELECT r.user_id, r.request, ${idTokenFactsSql('COALESCE(r.auth_time, r.issued_at)', 'r.sid')} FROM redeemed r JOIN portal_users u ON u.id = r.user_id`,
);

/** Approved sign-ins (`authorizations`) and the codes issued for them (`authorization_codes`). */
@Injectable()
export class AuthorizationCodesRepository {
  /**
   * Records the approval; false when the state was already used (it is single use), or when the
   * user was disabled or signed out since their password was checked. An approval left for a
   * polling device is announced to every instance when it commits.
   */
  async insertApproval(manager: EntityManager, approval: Approval, pickedUp: boolean): Promise<boolean> {
    const rows = await manager.query(
      `WITH ${issuableUserCte('$3::uuid')},
       approved AS (
         INSERT INTO authorizations (state_id, client_id, user_id, redirect_url, code_challenge, expires_at, picked_up_at, upstream_session_id, auth_time, sid)
         SELECT $1, $2, u.id, $4, $5, $6, CASE WHEN $7 THEN now() END, $9, $10, $11 FROM issuable_user u
         WHERE u.tokens_valid_after IS NOT DISTINCT FROM $8
         ON CONFLICT (state_id) DO NOTHING RETURNING state_id, expires_at)
       SELECT CASE WHEN $7 THEN NULL ELSE pg_notify('${STATE_APPROVED_CHANNEL}', ${notifiedIdPayloadSql('state_id', 'expires_at')}) END
       FROM approved`,
      [
        approval.stateId,
        approval.clientId,
        approval.userId,
        approval.redirectUrl,
        approval.codeChallenge,
        approval.stateExpiresAt,
        pickedUp,
        approval.userStamp,
        approval.upstreamSessionId,
        approval.signIn.authTime,
        approval.signIn.sid,
      ],
    );
    return rows.length > 0;
  }

  /** Records a cancelled sign-in (false when the state was already used); a polling device's is announced like an approval. */
  async insertDenial(manager: EntityManager, denial: Denial): Promise<boolean> {
    const rows = await manager.query(
      `WITH denied AS (
         INSERT INTO authorizations (state_id, client_id, redirect_url, expires_at, denied_at) VALUES ($1, $2, $3, $4, now())
         ON CONFLICT (state_id) DO NOTHING RETURNING state_id, expires_at)
       SELECT CASE WHEN $3::text IS NULL THEN pg_notify('${STATE_APPROVED_CHANNEL}', ${notifiedIdPayloadSql('state_id', 'expires_at')}) END FROM denied`,
      [denial.stateId, denial.clientId, denial.redirectUrl, denial.stateExpiresAt],
    );
    return rows.length > 0;
  }

  /** Whether a state was cancelled at the identity provider (its polling device is told access_denied). */
  async isDenied(manager: EntityManager, stateId: string, clientId: string): Promise<boolean> {
    return (await manager.query('SELECT 1 FROM authorizations WHERE state_id = $1 AND client_id = $2 AND denied_at IS NOT NULL', [stateId, clientId])).length > 0;
  }

  /** States approved for a polling device whose code has not been collected yet. */
  async awaitingPickUp(manager: EntityManager): Promise<{ stateId: string; expiresAt: Date }[]> {
    const rows: { state_id: string; expires_at: Date }[] = await manager.query(
      'SELECT state_id, expires_at FROM authorizations WHERE picked_up_at IS NULL AND voided_at IS NULL AND expires_at > now()',
    );
    return rows.map((row) => ({ stateId: row.state_id, expiresAt: row.expires_at }));
  }

  async isStateUsed(manager: EntityManager, stateId: string): Promise<boolean> {
    return (await manager.query('SELECT 1 FROM authorizations WHERE state_id = $1', [stateId])).length > 0;
  }

  /**
   * The polling flow's hand-over, in one statement: marks an approved, not yet collected state
   * as collected and stores the new code's hash, with the approval's sign-in. Nothing matches
   * (one primary-key probe) while the user has not signed in, after the code was collected, for a
   * disabled client, and for an approval a sign-out voided (or whose user was signed out or
   * disabled since).
   */
  async pickUp(manager: EntityManager, stateId: string, clientId: string, codeHash: Buffer, codeLifetimeSeconds: number): Promise<boolean> {
    const rows = await manager.query(
      `WITH ${issuableUserCte('(SELECT user_id FROM authorizations WHERE state_id = $1)')},
       picked AS (
         UPDATE authorizations a SET picked_up_at = now()
         FROM issuable_user u
         WHERE a.state_id = $1 AND a.client_id = $2 AND a.picked_up_at IS NULL AND a.voided_at IS NULL AND a.expires_at > now()
           AND u.id = a.user_id AND ${issuedAfterStampSql('a.created_at')}
           AND EXISTS (SELECT 1 FROM clients WHERE id = $2 AND enabled)
         RETURNING a.state_id, a.client_id, a.user_id, a.redirect_url, a.code_challenge, a.upstream_session_id, a.auth_time, a.sid)
       INSERT INTO authorization_codes (code_hash, state_id, client_id, user_id, redirect_url, code_challenge, upstream_session_id, auth_time, sid, expires_at)
       SELECT $3, state_id, client_id, user_id, redirect_url, code_challenge, upstream_session_id, auth_time, sid, now() + make_interval(secs => $4) FROM picked
       RETURNING 1`,
      [stateId, clientId, codeHash, codeLifetimeSeconds],
    );
    return rows.length > 0;
  }

  async insert(manager: EntityManager, code: NewAuthorizationCode): Promise<void> {
    await manager.query(
      `INSERT INTO authorization_codes (code_hash, state_id, client_id, user_id, redirect_url, code_challenge, upstream_session_id, request, auth_time, sid, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now() + make_interval(secs => $11))`,
      [
        code.codeHash,
        code.stateId,
        code.clientId,
        code.userId,
        code.redirectUrl,
        code.codeChallenge,
        code.upstreamSessionId,
        code.request,
        code.signIn.authTime,
        code.signIn.sid,
        code.lifetimeSeconds,
      ],
    );
  }

  /**
   * The usual exchange in one statement (one round trip, its own transaction): consumes an
   * unused, unexpired code of this client whose PKCE challenge and redirect URL match, and
   * creates its grant and first refresh token, reading what the grant's ID token says (so a
   * failure to read it spends nothing). Undefined when any of that does not hold, or when a
   * concurrent exchange consumed it first; the caller then works out why under a lock.
   */
  async redeem(
    dataSource: DataSource,
    redemption: {
      codeHash: Buffer;
      clientId: string;
      /** The S256 challenge of the presented verifier; null without one. */
      challenge: string | null;
      /** The presented redirect_uri; null when the request has none (it must then not be checked). */
      redirectUri: string | null;
      grantId: string;
      scope: string | null;
      refreshTokenHash: Buffer;
      refreshTokenLifetimeSeconds: number;
      /** Who redeems it: the address the grant is made from. */
      address: string;
    },
  ): Promise<RedeemedCode | undefined> {
    const [row] = await REDEEM.run(dataSource, [
      redemption.codeHash,
      redemption.clientId,
      redemption.challenge,
      redemption.redirectUri,
      redemption.grantId,
      redemption.scope,
      redemption.refreshTokenHash,
      redemption.refreshTokenLifetimeSeconds,
      grantAddress(redemption.address),
    ]);
    return row;
  }

  /**
   * The code row, locked until the transaction ends, so two exchanges of one code serialise; its
   * user's row is locked (shared) first, as in every issuing statement (revocations.ts).
   */
  async lock(manager: EntityManager, codeHash: Buffer): Promise<AuthorizationCodeRow | undefined> {
    const [row] = await manager.query(
      `WITH ${issuableUserCte('(SELECT user_id FROM authorization_codes WHERE code_hash = $1)')}
       SELECT c.client_id, c.user_id, c.redirect_url, c.code_challenge, c.expires_at <= now() AS expired, c.consumed_at, c.grant_id, c.upstream_session_id, c.request, c.issued_at, c.auth_time, c.sid,
         (u.id IS NOT NULL AND ${issuedAfterStampSql('c.issued_at')}) AS user_issuable
       FROM authorization_codes c LEFT JOIN issuable_user u ON u.id = c.user_id
       WHERE c.code_hash = $1 FOR UPDATE OF c`,
      [codeHash],
    );
    return row;
  }

  async markConsumed(manager: EntityManager, codeHash: Buffer, grantId: string | null): Promise<void> {
    await manager.query('UPDATE authorization_codes SET consumed_at = now(), grant_id = $2 WHERE code_hash = $1', [codeHash, grantId]);
  }
}
