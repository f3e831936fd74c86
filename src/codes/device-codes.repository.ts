import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { isUniqueViolation } from '../common/errors/app-error.js';
import { displayNameOf, type UpstreamProfile } from '../users/user.entity.js';
import { currentScopeSql, issuableUserCte, issuedAfterStampSql } from '../grants/revocations.js';

/** RFC 8628 §3.5: each `slow_down` adds this many seconds to the device code's interval. */
export const SLOW_DOWN_STEP_SECONDS = 5;

export interface NewDeviceCode {
  deviceCodeHash: Buffer;
  userCode: string;
  clientId: string;
  scope: string | null;
  lifetimeSeconds: number;
  intervalSeconds: number;
}

/**
 * What a user code names, as the verification page explains it: still waiting for its user, or
 * why not. 'cancelled': a sign-out voided it (the account that signed in for it was signed out or
 * disabled).
 */
export type UserCodeState = 'pending' | 'expired' | 'approved' | 'denied' | 'cancelled';

export interface FoundDeviceCode {
  clientId: string;
  scope: string | null;
  state: UserCodeState;
  /** Who signed in for it on the verification page, if anyone: named on the page that ends it. */
  signedInUsername: string | null;
  /** Whether that account has been disabled since. */
  signedInUserDisabled: boolean;
  /** When the code expires: a sign-in at an identity provider for it must come back before. */
  expiresAt: Date;
}

/**
 * The sign-in behind an approval form: when its user signed in and the browser session they
 * signed in (or continued) in, for the ID tokens' `auth_time` and `sid`.
 */
export interface DeviceSignIn {
  authTime: Date;
  sid: string;
}

/** What one poll of a device code finds (RFC 8628 §3.5), after which the poll is recorded. */
export type PollOutcome =
  /** Approved: consumed by this poll, in its transaction; `signIn` null for codes approved before sign-ins were kept. */
  | { outcome: 'approved'; userId: string; scope: string | null; upstreamSessionId: string | null; signIn: DeviceSignIn | null }
  /** Approved at an identity provider in relay mode: consumed by this poll; its tokens wait in relay_hand_overs. */
  | { outcome: 'relayed' }
  | { outcome: 'pending' | 'slow_down' | 'denied' | 'expired' }
  /** Unknown, another client's, or already exchanged. */
  | { outcome: 'invalid' };

/**
 * Judged in one statement, on the row locked for it, so polls of one device code on any number
 * of instances see each other's times. clock_timestamp(), not now(): a poll that waited on the
 * lock may have started before the one it waited for recorded its time. It is an issuing
 * statement (revocations.ts): the approving user's row is locked first, and an approval that a
 * sign-out voided, or whose user was signed out or disabled since, has ended ('expired'); the
 * scope issued is what the client may still have.
 */
const POLL_SQL = `
  WITH ${issuableUserCte('(SELECT user_id FROM device_codes WHERE device_code_hash = $1 AND client_id = $2)')},
  found AS (
    SELECT d.device_code_hash, d.status, d.user_id, d.upstream_session_id, d.auth_time, d.sid, ${currentScopeSql('d.scope', '$2')} AS scope,
      CASE
        WHEN d.consumed_at IS NOT NULL THEN 'invalid'
        WHEN d.voided_at IS NOT NULL OR d.expires_at <= now() THEN 'expired'
        WHEN d.last_polled_at IS NOT NULL AND clock_timestamp() < d.last_polled_at + make_interval(secs => d.interval_seconds) THEN 'slow_down'
        WHEN d.status = 'approved' AND d.user_id IS NULL THEN 'relayed'
        WHEN d.status = 'approved' AND u.id IS NOT NULL AND ${issuedAfterStampSql('d.decided_at')} THEN 'approved'
        WHEN d.status = 'approved' THEN 'expired'
        WHEN d.status = 'denied' THEN 'denied'
        ELSE 'pending'
      END AS outcome
    FROM device_codes d LEFT JOIN issuable_user u ON u.id = d.user_id
    WHERE d.device_code_hash = $1 AND d.client_id = $2
    FOR UPDATE OF d),
  recorded AS (
    UPDATE device_codes d SET
      last_polled_at = clock_timestamp(),
      interval_seconds = d.interval_seconds + CASE WHEN found.outcome = 'slow_down' THEN ${SLOW_DOWN_STEP_SECONDS} ELSE 0 END,
      consumed_at = CASE WHEN found.outcome IN ('approved', 'relayed') THEN now() ELSE d.consumed_at END
    FROM found WHERE d.device_code_hash = found.device_code_hash AND found.outcome NOT IN ('invalid', 'expired'))
  SELECT outcome, user_id, scope, upstream_session_id, auth_time, sid FROM found`;

/** Device authorizations of the standard device flow (RFC 8628), every expiry by PostgreSQL's clock. */
@Injectable()
export class DeviceCodesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Stores a new device authorization; false when its user code is taken (draw another and retry). */
  async insert(code: NewDeviceCode): Promise<boolean> {
    try {
      await this.dataSource.query(
        `INSERT INTO device_codes (device_code_hash, user_code, client_id, scope, interval_seconds, expires_at)
         VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))`,
        [code.deviceCodeHash, code.userCode, code.clientId, code.scope, code.intervalSeconds, code.lifetimeSeconds],
      );
      return true;
    } catch (error) {
      if (isUniqueViolation(error)) return false;
      throw error;
    }
  }

  /** The authorization a user code names, in whatever state (decided ones stay until purged after they expire). */
  async findByUserCode(userCode: string): Promise<FoundDeviceCode | null> {
    const [row]: { client_id: string; scope: string | null; state: UserCodeState; username: string | null; profile: UpstreamProfile | null; disabled: boolean; expires_at: Date }[] = await this.dataSource.query(
      `SELECT d.client_id, d.scope, u.username, u.profile, u.disabled_at IS NOT NULL AS disabled, d.expires_at,
         CASE
           WHEN d.consumed_at IS NOT NULL THEN 'approved'
           WHEN d.voided_at IS NOT NULL THEN 'cancelled'
           WHEN d.status <> 'pending' THEN d.status
           WHEN d.expires_at <= now() THEN 'expired'
           ELSE 'pending'
         END AS state
       FROM device_codes d LEFT JOIN portal_users u ON u.id = d.signed_in_user_id
       WHERE d.user_code = $1`,
      [userCode],
    );
    return (
      row && {
        clientId: row.client_id,
        scope: row.scope,
        state: row.state,
        signedInUsername: row.username === null ? null : displayNameOf({ username: row.username, profile: row.profile }),
        signedInUserDisabled: row.disabled === true,
        expiresAt: row.expires_at,
      }
    );
  }

  /**
   * A user signed in on the verification page (or continued their browser session there): only
   * the approval form carrying the value whose hash is stored here may decide (a later sign-in
   * replaces it, and its `signIn`). False when no longer pending, or when the user was disabled
   * or signed out since their password was checked (`userStamp`, their tokens_valid_after as
   * read then).
   */
  async signIn(userCode: string, userId: string, userStamp: Date | null, approvalNonceHash: Buffer, upstreamSessionId: string | null, signIn: DeviceSignIn): Promise<boolean> {
    const [, affected]: [unknown, number] = await this.dataSource.query(
      `WITH ${issuableUserCte('$2::uuid')}
       UPDATE device_codes d SET signed_in_user_id = u.id, approval_nonce_hash = $3, upstream_session_id = $5, auth_time = $6, sid = $7
       FROM issuable_user u
       WHERE d.user_code = $1 AND d.status = 'pending' AND d.voided_at IS NULL AND d.expires_at > now()
         AND u.tokens_valid_after IS NOT DISTINCT FROM $4`,
      [userCode, userId, approvalNonceHash, userStamp, upstreamSessionId, signIn.authTime, signIn.sid],
    );
    // A relayed sign-in this one replaces leaves nothing behind.
    if (affected === 1) await this.dataSource.query('DELETE FROM relay_hand_overs WHERE device_code_hash = (SELECT device_code_hash FROM device_codes WHERE user_code = $1)', [userCode]);
    return affected === 1;
  }

  /**
   * The sign-in was cancelled at the identity provider: the code is denied, as if its user had
   * chosen Deny (no user is known). False when it was no longer pending.
   */
  async denyPending(userCode: string): Promise<boolean> {
    const [, affected]: [unknown, number] = await this.dataSource.query(
      `UPDATE device_codes SET status = 'denied', upstream_decided_at = now(), decided_at = now()
       WHERE user_code = $1 AND status = 'pending' AND voided_at IS NULL AND expires_at > now()`,
      [userCode],
    );
    return affected === 1;
  }

  /**
   * The signed-in user's decision, once: the deciding user, or null when the code is no longer
   * pending (decided, expired, unknown) or the approval form is not the latest sign-in's.
   */
  async decide(userCode: string, approvalNonceHash: Buffer, decision: 'approved' | 'denied'): Promise<{ userId: string | null } | null> {
    // A relayed sign-in's form has no local user: decided at the provider's word, whose tokens
    // wait in relay_hand_overs until the device's poll, or are erased at once when denied.
    const [row]: { user_id: string | null }[] = await this.dataSource.query(
      `WITH decided AS (
         UPDATE device_codes SET status = $3, user_id = signed_in_user_id, decided_at = now(),
           upstream_decided_at = CASE WHEN signed_in_user_id IS NULL THEN now() END
         WHERE user_code = $1 AND approval_nonce_hash = $2 AND status = 'pending' AND voided_at IS NULL AND expires_at > now()
         RETURNING device_code_hash, user_id),
       erased AS (DELETE FROM relay_hand_overs h USING decided d WHERE $3 = 'denied' AND h.device_code_hash = d.device_code_hash)
       SELECT user_id FROM decided`,
      [userCode, approvalNonceHash, decision],
    );
    return row ? { userId: row.user_id } : null;
  }

  /**
   * One poll by the device (RFC 8628 §3.4): an approved code is consumed by it, in `manager`'s
   * transaction, so the grant made from it commits with the consumption or not at all.
   */
  async poll(manager: EntityManager, deviceCodeHash: Buffer, clientId: string): Promise<PollOutcome> {
    const [row]: { outcome: PollOutcome['outcome']; user_id: string | null; scope: string | null; upstream_session_id: string | null; auth_time: Date | null; sid: string | null }[] = await manager.query(
      POLL_SQL,
      [deviceCodeHash, clientId],
    );
    if (!row) return { outcome: 'invalid' };
    if (row.outcome === 'approved') {
      const signIn = row.auth_time && row.sid ? { authTime: row.auth_time, sid: row.sid } : null;
      return { outcome: 'approved', userId: row.user_id!, scope: row.scope, upstreamSessionId: row.upstream_session_id, signIn };
    }
    return { outcome: row.outcome };
  }

  /** Deletes up to `limit` expired authorizations: how many, and how many of them no user had decided. */
  async purgeExpired(limit: number): Promise<{ deleted: number; undecided: number }> {
    const [row]: { deleted: number; undecided: number }[] = await this.dataSource.query(
      `WITH purged AS (
         DELETE FROM device_codes WHERE device_code_hash IN (SELECT device_code_hash FROM device_codes WHERE expires_at <= now() LIMIT $1)
         RETURNING status)
       SELECT count(*)::int AS deleted, (count(*) FILTER (WHERE status = 'pending'))::int AS undecided FROM purged`,
      [limit],
    );
    return row;
  }
}
