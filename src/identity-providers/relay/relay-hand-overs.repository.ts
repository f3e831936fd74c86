import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { notifiedIdPayloadSql } from '../../database/notified-id-set.js';
import { STATE_APPROVED_CHANNEL } from '../../codes/authorization-codes.repository.js';

/** A provider's token response waiting for its device, sealed under `relayContext(id)`. */
export interface WaitingHandOver {
  id: string;
  provider: string;
  tokenResponseSealed: Buffer;
  /** The bindings of a helper code: the PKCE challenge and redirect URL of its sign-in link. */
  codeChallenge: string | null;
  redirectUrl: string | null;
}

export const relayContext = (id: string) => `relay:${id}`;

/**
 * relay_hand_overs (and, for the helper's sign-in link, its row in authorizations): a relayed
 * sign-in's token response, kept sealed until the device collects it by the service's own
 * single-use code or device code, then erased. The row itself stays until its code expires, so a
 * code presented again is known for a replay (and the tokens recorded with its id are ended).
 */
@Injectable()
export class RelayHandOversRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * The helper's sign-in link ended relayed: its state is spent (false when it already was), and
   * the sealed answer waits for the code (`codeHash` now for a redirect, else minted at pick-up;
   * a polling device's instances hear of it as of an approval).
   */
  async forHelper(
    hand: { stateId: string; clientId: string; provider: string; redirectUrl: string | null; codeChallenge: string | null; stateExpiresAt: Date; codeHash: Buffer | null; codeLifetimeSeconds: number },
    seal: (id: string) => Buffer,
  ): Promise<boolean> {
    const id = randomUUID();
    return this.dataSource.transaction(async (manager) => {
      const spent = await manager.query(
        `WITH relayed AS (
           INSERT INTO authorizations (state_id, client_id, redirect_url, code_challenge, expires_at, relayed, picked_up_at)
           VALUES ($1, $2, $3, $4, $5, true, CASE WHEN $6 THEN now() END) ON CONFLICT (state_id) DO NOTHING RETURNING state_id, expires_at)
         SELECT CASE WHEN NOT $6 THEN pg_notify('${STATE_APPROVED_CHANNEL}', ${notifiedIdPayloadSql('state_id', 'expires_at')}) END FROM relayed`,
        [hand.stateId, hand.clientId, hand.redirectUrl, hand.codeChallenge, hand.stateExpiresAt, hand.codeHash !== null],
      );
      if (spent.length === 0) return false;
      await manager.query(
        `INSERT INTO relay_hand_overs (id, client_id, provider, token_response_sealed, state_id, code_hash, redirect_url, code_challenge, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, CASE WHEN $6::bytea IS NULL THEN $9 ELSE now() + make_interval(secs => $10) END)`,
        [id, hand.clientId, hand.provider, seal(id), hand.stateId, hand.codeHash, hand.redirectUrl, hand.codeChallenge, hand.stateExpiresAt, hand.codeLifetimeSeconds],
      );
      return true;
    });
  }

  /**
   * A user signed in at a provider for a device code that still waits: the provider's answer is
   * kept for it (replacing an earlier sign-in's), and only the approval form carrying the value
   * whose hash is stored may decide, as after a local sign-in. False when it no longer waited.
   */
  async forDevice(hand: { userCode: string; provider: string; approvalNonceHash: Buffer }, seal: (id: string) => Buffer): Promise<boolean> {
    const id = randomUUID();
    return this.dataSource.transaction(async (manager) => {
      const [[waiting]]: [{ device_code_hash: Buffer; client_id: string; expires_at: Date }[], number] = await manager.query(
        `UPDATE device_codes SET signed_in_user_id = NULL, upstream_session_id = NULL, approval_nonce_hash = $2
         WHERE user_code = $1 AND status = 'pending' AND voided_at IS NULL AND expires_at > now()
         RETURNING device_code_hash, client_id, expires_at`,
        [hand.userCode, hand.approvalNonceHash],
      );
      if (!waiting) return false;
      await manager.query(
        `INSERT INTO relay_hand_overs (id, client_id, provider, token_response_sealed, device_code_hash, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (device_code_hash) DO UPDATE SET id = EXCLUDED.id, provider = EXCLUDED.provider, token_response_sealed = EXCLUDED.token_response_sealed`,
        [id, waiting.client_id, hand.provider, seal(id), waiting.device_code_hash, waiting.expires_at],
      );
      return true;
    });
  }

  /** A polling helper device collects its code: minted here, once. */
  async pickUp(stateId: string, clientId: string, codeHash: Buffer, codeLifetimeSeconds: number): Promise<boolean> {
    const [, affected]: [unknown, number] = await this.dataSource.query(
      `UPDATE relay_hand_overs SET code_hash = $3, expires_at = now() + make_interval(secs => $4)
       WHERE state_id = $1 AND client_id = $2 AND code_hash IS NULL AND expires_at > now()
         AND EXISTS (SELECT 1 FROM clients WHERE id = $2 AND enabled)`,
      [stateId, clientId, codeHash, codeLifetimeSeconds],
    );
    return affected === 1;
  }

  /**
   * The code's sealed answer, taken once (and erased) when the code is this client's and
   * unexpired; the caller checks its bindings, and a mismatch has spent it all the same, as a
   * failed check spends the service's own codes.
   */
  redeem(manager: EntityManager, codeHash: Buffer, clientId: string): Promise<WaitingHandOver | undefined> {
    return this.take(manager, 'code_hash = $1 AND client_id = $2', [codeHash, clientId]);
  }

  /**
   * A relayed code of this client that was already presented (redeemed, or spent by a failed
   * check), locked: a redemption still under way is waited for, so a replay racing it is one.
   */
  async presented(manager: EntityManager, codeHash: Buffer, clientId: string): Promise<{ id: string; provider: string } | undefined> {
    const [row]: { id: string; provider: string }[] = await manager.query(
      'SELECT id, provider FROM relay_hand_overs WHERE code_hash = $1 AND client_id = $2 AND handed_over_at IS NOT NULL FOR UPDATE',
      [codeHash, clientId],
    );
    return row;
  }

  /** A relayed device code's sealed answer, taken once, in the poll's transaction. */
  collect(manager: EntityManager, deviceCodeHash: Buffer): Promise<WaitingHandOver | undefined> {
    return this.take(manager, 'device_code_hash = $1', [deviceCodeHash]);
  }

  private async take(manager: EntityManager, where: string, params: unknown[]): Promise<WaitingHandOver | undefined> {
    const [row]: { id: string; provider: string; token_response_sealed: Buffer; code_challenge: string | null; redirect_url: string | null }[] = await manager.query(
      `WITH waiting AS (
         SELECT id, provider, token_response_sealed, code_challenge, redirect_url FROM relay_hand_overs
         WHERE ${where} AND handed_over_at IS NULL AND expires_at > now() FOR UPDATE),
       taken AS (UPDATE relay_hand_overs h SET handed_over_at = now(), token_response_sealed = NULL FROM waiting w WHERE h.id = w.id)
       SELECT id, provider, token_response_sealed, code_challenge, redirect_url FROM waiting`,
      params,
    );
    return row && { id: row.id, provider: row.provider, tokenResponseSealed: row.token_response_sealed, codeChallenge: row.code_challenge, redirectUrl: row.redirect_url };
  }

  /** Hand-overs never collected, or collected (their sealed answer is already erased; like a consumed code the row is kept until the code expires, and its relayed tokens live on, unlinked). Up to `limit` rows; returns how many were deleted (a housekeeping purge). */
  async purgeExpired(limit: number): Promise<number> {
    const [, deleted]: [unknown, number] = await this.dataSource.query(
      `DELETE FROM relay_hand_overs WHERE ctid IN (SELECT ctid FROM relay_hand_overs WHERE expires_at < now() LIMIT $1)`,
      [limit],
    );
    return deleted;
  }
}
