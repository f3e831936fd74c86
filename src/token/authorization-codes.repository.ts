import { Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { notifiedIdPayloadSql } from '../database/notified-id-set.js';
import { PreparedStatement } from '../database/prepared-statement.js';

export interface AuthorizationCodeRow {
  client_id: string;
  user_id: string;
  redirect_url: string | null;
  code_challenge: string | null;
  expired: boolean;
  consumed_at: Date | null;
  grant_id: string | null;
}

export interface NewAuthorizationCode {
  codeHash: Buffer;
  stateId: string;
  clientId: string;
  userId: string;
  redirectUrl: string | null;
  codeChallenge: string | null;
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
}

/** NOTIFY channel announcing a state whose code now waits for its polling device (a NotifiedIdSet). */
export const STATE_APPROVED_CHANNEL = 'vc_state_approved';

const REDEEM = new PreparedStatement<{ user_id: string }>(
  'redeem-authorization-code',
  `WITH redeemed AS (
     UPDATE authorization_codes SET consumed_at = now(), grant_id = $5
     WHERE code_hash = $1 AND client_id = $2 AND consumed_at IS NULL AND expires_at > now()
       AND code_challenge IS NOT DISTINCT FROM $3 AND ($4::text IS NULL OR redirect_url = $4)
     RETURNING user_id),
   granted AS (
     INSERT INTO grants (id, client_id, user_id, scope) SELECT $5, $2, user_id, $6 FROM redeemed RETURNING id),
   first_refresh AS (
     INSERT INTO refresh_tokens (token_hash, grant_id, client_id, expires_at) SELECT $7, id, $2, now() + make_interval(secs => $8) FROM granted)
   SELECT user_id FROM redeemed`,
);

/** Approved sign-ins (`authorizations`) and the codes issued for them (`authorization_codes`). */
@Injectable()
export class AuthorizationCodesRepository {
  /**
   * Records the approval; false when the state was already used (it is single use). An approval
   * left for a polling device is announced to every instance when it commits.
   */
  async insertApproval(manager: EntityManager, approval: Approval, pickedUp: boolean): Promise<boolean> {
    const rows = await manager.query(
      `WITH approved AS (
         INSERT INTO authorizations (state_id, client_id, user_id, redirect_url, code_challenge, expires_at, picked_up_at)
         VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7 THEN now() END)
         ON CONFLICT (state_id) DO NOTHING RETURNING state_id, expires_at)
       SELECT CASE WHEN $7 THEN NULL ELSE pg_notify('${STATE_APPROVED_CHANNEL}', ${notifiedIdPayloadSql('state_id', 'expires_at')}) END
       FROM approved`,
      [approval.stateId, approval.clientId, approval.userId, approval.redirectUrl, approval.codeChallenge, approval.stateExpiresAt, pickedUp],
    );
    return rows.length > 0;
  }

  /** States approved for a polling device whose code has not been collected yet. */
  async awaitingPickUp(manager: EntityManager): Promise<{ stateId: string; expiresAt: Date }[]> {
    const rows: { state_id: string; expires_at: Date }[] = await manager.query(
      'SELECT state_id, expires_at FROM authorizations WHERE picked_up_at IS NULL AND expires_at > now()',
    );
    return rows.map((row) => ({ stateId: row.state_id, expiresAt: row.expires_at }));
  }

  async isStateUsed(manager: EntityManager, stateId: string): Promise<boolean> {
    return (await manager.query('SELECT 1 FROM authorizations WHERE state_id = $1', [stateId])).length > 0;
  }

  /**
   * The polling flow's hand-over, in one statement: marks an approved, not yet collected state
   * as collected and stores the new code's hash. Nothing matches (one primary-key probe) while
   * the user has not signed in, after the code was collected, or for a disabled client.
   */
  async pickUp(manager: EntityManager, stateId: string, clientId: string, codeHash: Buffer, codeLifetimeSeconds: number): Promise<boolean> {
    const rows = await manager.query(
      `WITH picked AS (
         UPDATE authorizations SET picked_up_at = now()
         WHERE state_id = $1 AND client_id = $2 AND picked_up_at IS NULL AND expires_at > now()
           AND EXISTS (SELECT 1 FROM clients WHERE id = $2 AND enabled)
         RETURNING state_id, client_id, user_id, redirect_url, code_challenge)
       INSERT INTO authorization_codes (code_hash, state_id, client_id, user_id, redirect_url, code_challenge, expires_at)
       SELECT $3, state_id, client_id, user_id, redirect_url, code_challenge, now() + make_interval(secs => $4) FROM picked
       RETURNING 1`,
      [stateId, clientId, codeHash, codeLifetimeSeconds],
    );
    return rows.length > 0;
  }

  async insert(manager: EntityManager, code: NewAuthorizationCode): Promise<void> {
    await manager.query(
      `INSERT INTO authorization_codes (code_hash, state_id, client_id, user_id, redirect_url, code_challenge, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))`,
      [code.codeHash, code.stateId, code.clientId, code.userId, code.redirectUrl, code.codeChallenge, code.lifetimeSeconds],
    );
  }

  /**
   * The usual exchange in one statement (one round trip, its own transaction): consumes an
   * unused, unexpired code of this client whose PKCE challenge and redirect URL match, and
   * creates its grant and first refresh token. False when any of that does not hold, or when a
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
    },
  ): Promise<{ user_id: string } | undefined> {
    const [row] = await REDEEM.run(dataSource, [
      redemption.codeHash,
      redemption.clientId,
      redemption.challenge,
      redemption.redirectUri,
      redemption.grantId,
      redemption.scope,
      redemption.refreshTokenHash,
      redemption.refreshTokenLifetimeSeconds,
    ]);
    return row;
  }

  /** The code row, locked until the transaction ends, so two exchanges of one code serialise. */
  async lock(manager: EntityManager, codeHash: Buffer): Promise<AuthorizationCodeRow | undefined> {
    const [row] = await manager.query(
      `SELECT client_id, user_id, redirect_url, code_challenge, expires_at <= now() AS expired, consumed_at, grant_id
       FROM authorization_codes WHERE code_hash = $1 FOR UPDATE`,
      [codeHash],
    );
    return row;
  }

  async markConsumed(manager: EntityManager, codeHash: Buffer, grantId: string | null): Promise<void> {
    await manager.query('UPDATE authorization_codes SET consumed_at = now(), grant_id = $2 WHERE code_hash = $1', [codeHash, grantId]);
  }
}
