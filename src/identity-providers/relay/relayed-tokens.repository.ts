import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';

export type RelayedKind = 'access_token' | 'refresh_token';

/** A relayed refresh token leased to one refresh while its provider is asked. */
export interface LeasedRefresh {
  provider: string;
}

/**
 * relayed_tokens: the provider's tokens the service handed to a device, by hash, with the client
 * they belong to and the hand-over they descend from. A refresh token is leased while its refresh
 * waits for the provider (refreshing_until; no transaction stays open meanwhile): one refresh at
 * a time, and the lease ends with the refresh, whatever its outcome.
 */
@Injectable()
export class RelayedTokensRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Records what is handed to `clientId`, in the caller's transaction (the hand-over's, or the
   * refresh's after settle(), which holds the hand-over row: a purge cannot take it meanwhile).
   * A token recorded again (a refresh token the provider kept) is no longer leased.
   */
  async record(manager: EntityManager, tokens: { hash: Buffer; kind: RelayedKind; lifetimeSeconds: number }[], clientId: string, provider: string, handOverId: string | null): Promise<void> {
    for (const token of tokens) {
      await manager.query(
        `INSERT INTO relayed_tokens (token_hash, kind, client_id, provider, expires_at, hand_over_id) VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5), $6)
         ON CONFLICT (token_hash) DO UPDATE SET expires_at = EXCLUDED.expires_at, refreshing_until = NULL WHERE relayed_tokens.client_id = EXCLUDED.client_id`,
        [token.hash, token.kind, clientId, provider, token.lifetimeSeconds, handOverId],
      );
    }
  }

  async find(hash: Buffer): Promise<{ kind: RelayedKind; clientId: string; provider: string } | undefined> {
    const [row]: { kind: RelayedKind; client_id: string; provider: string }[] = await this.dataSource.query(
      'SELECT kind, client_id, provider FROM relayed_tokens WHERE token_hash = $1 AND expires_at > now()',
      [hash],
    );
    return row && { kind: row.kind, clientId: row.client_id, provider: row.provider };
  }

  /**
   * A live relayed refresh token of `clientId`, leased for `leaseSeconds` (a lease left by a
   * crash runs out). 'busy' while another refresh's lease runs; 'foreign' when it is another
   * client's (nothing is leased); undefined when it is not a live relayed refresh token.
   */
  async leaseRefresh(hash: Buffer, clientId: string, leaseSeconds: number): Promise<LeasedRefresh | 'busy' | 'foreign' | undefined> {
    const [[leased]]: [{ provider: string }[], number] = await this.dataSource.query(
      `UPDATE relayed_tokens SET refreshing_until = now() + make_interval(secs => $3)
       WHERE token_hash = $1 AND kind = 'refresh_token' AND client_id = $2 AND expires_at > now()
         AND (refreshing_until IS NULL OR refreshing_until <= now())
       RETURNING provider`,
      [hash, clientId, leaseSeconds],
    );
    if (leased) return { provider: leased.provider };
    const [held]: { client_id: string }[] = await this.dataSource.query(
      `SELECT client_id FROM relayed_tokens WHERE token_hash = $1 AND kind = 'refresh_token' AND expires_at > now()`,
      [hash],
    );
    if (!held) return undefined;
    // This client's and live, yet not leased: another refresh holds it (or released it a moment ago).
    return held.client_id === clientId ? 'busy' : 'foreign';
  }

  /** The refresh did not reach an answer: the token is as before, and a retry may go at once. */
  async release(hash: Buffer): Promise<void> {
    await this.dataSource.query('UPDATE relayed_tokens SET refreshing_until = NULL WHERE token_hash = $1', [hash]);
  }

  /**
   * The provider answered a leased refresh: the token is erased when `spent` (rotated), else
   * locked to be recorded again. Its hand-over (the relayed code's row, while it lives) is locked
   * first, as a second presentation of that code locks it: that ending and this refresh come one
   * after the other, never interleaved. Undefined when the token was forgotten meanwhile (revoked,
   * or its code presented again): nothing is to be handed out.
   */
  async settle(manager: EntityManager, hash: Buffer, spent: boolean): Promise<{ handOverId: string | null } | undefined> {
    await manager.query('SELECT h.id FROM relayed_tokens t JOIN relay_hand_overs h ON h.id = t.hand_over_id WHERE t.token_hash = $1 FOR KEY SHARE OF h', [hash]);
    const rows: { hand_over_id: string | null }[] = spent
      ? (await manager.query('DELETE FROM relayed_tokens WHERE token_hash = $1 RETURNING hand_over_id', [hash]))[0]
      : await manager.query('SELECT hand_over_id FROM relayed_tokens WHERE token_hash = $1 FOR UPDATE', [hash]);
    return rows[0] && { handOverId: rows[0].hand_over_id };
  }

  async forget(manager: EntityManager, hash: Buffer): Promise<void> {
    await manager.query('DELETE FROM relayed_tokens WHERE token_hash = $1', [hash]);
  }

  /** Every token that descends from a hand-over, forgotten (its code came back); how many. */
  async forgetHandedOver(manager: EntityManager, handOverId: string): Promise<number> {
    const [, deleted]: [unknown, number] = await manager.query('DELETE FROM relayed_tokens WHERE hand_over_id = $1', [handOverId]);
    return deleted;
  }

  /** Relayed tokens past their life. Up to `limit` rows; returns how many were deleted (a housekeeping purge). */
  async purgeExpired(limit: number): Promise<number> {
    const [, deleted]: [unknown, number] = await this.dataSource.query(
      `DELETE FROM relayed_tokens WHERE ctid IN (SELECT ctid FROM relayed_tokens WHERE expires_at < now() LIMIT $1)`,
      [limit],
    );
    return deleted;
  }
}
