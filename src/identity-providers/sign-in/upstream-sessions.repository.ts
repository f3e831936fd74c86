import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';

/** A brokered sign-in's link to its provider, as the refresh re-check reads it. */
export interface UpstreamSession {
  id: string;
  provider: string;
  refreshTokenSealed: Buffer | null;
}

/** The context an upstream session's refresh token is sealed under. */
export const sessionContext = (id: string) => `upstream-session:${id}`;

/**
 * upstream_sessions: what a brokered sign-in keeps of the provider's answer (its refresh token,
 * sealed) for the re-check at each refresh of the grant it leads to.
 */
@Injectable()
export class UpstreamSessionsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** A new session; `seal` gets its id, as the sealed token is bound to it. */
  async create(provider: string, userId: string, seal: (id: string) => Buffer | null): Promise<string> {
    const id = randomUUID();
    await this.dataSource.query('INSERT INTO upstream_sessions (id, provider, user_id, refresh_token_sealed) VALUES ($1, $2, $3, $4)', [id, provider, userId, seal(id)]);
    return id;
  }

  /** Some session that keeps a refresh token (which one does not matter), for the start-up check that the key opens them. */
  async anyWithRefreshToken(): Promise<UpstreamSession | undefined> {
    const [row]: { id: string; provider: string; refresh_token_sealed: Buffer }[] = await this.dataSource.query(
      'SELECT id, provider, refresh_token_sealed FROM upstream_sessions WHERE refresh_token_sealed IS NOT NULL LIMIT 1',
    );
    return row && { id: row.id, provider: row.provider, refreshTokenSealed: row.refresh_token_sealed };
  }

  /** The provider an upstream session is at (undefined once purged). */
  async providerOf(id: string): Promise<string | undefined> {
    const [row]: { provider: string }[] = await this.dataSource.query('SELECT provider FROM upstream_sessions WHERE id = $1', [id]);
    return row?.provider;
  }

  /**
   * The session of a grant when a re-check is due, leased to this caller for `leaseSeconds` (no
   * transaction stays open while the provider is asked): one re-check at a time. 'busy' while
   * another caller's lease runs; undefined when no re-check is due (or the grant has no session).
   */
  async leaseDue(grantId: string, recheckIntervalSeconds: number, leaseSeconds: number): Promise<UpstreamSession | 'busy' | undefined> {
    const [[leased]]: [{ id: string; provider: string; refresh_token_sealed: Buffer | null }[], number] = await this.dataSource.query(
      `UPDATE upstream_sessions s SET checking_until = now() + make_interval(secs => $3)
       FROM grants g
       WHERE g.id = $1 AND s.id = g.upstream_session_id AND s.checked_at <= now() - make_interval(secs => $2)
         AND (s.checking_until IS NULL OR s.checking_until <= now())
       RETURNING s.id, s.provider, s.refresh_token_sealed`,
      [grantId, recheckIntervalSeconds, leaseSeconds],
    );
    if (leased) return { id: leased.id, provider: leased.provider, refreshTokenSealed: leased.refresh_token_sealed };
    const [busy] = await this.dataSource.query(
      `SELECT 1 FROM grants g JOIN upstream_sessions s ON s.id = g.upstream_session_id
       WHERE g.id = $1 AND s.checked_at <= now() - make_interval(secs => $2) AND s.checking_until > now()`,
      [grantId, recheckIntervalSeconds],
    );
    return busy ? 'busy' : undefined;
  }

  /** The re-check is over: when the provider confirmed the user, the time and its rotated refresh token (if it gave one). */
  async release(id: string, confirmed: { refreshTokenSealed: Buffer | null } | null): Promise<void> {
    await this.dataSource.query(
      `UPDATE upstream_sessions SET checking_until = NULL,
         checked_at = CASE WHEN $2 THEN now() ELSE checked_at END,
         refresh_token_sealed = CASE WHEN $2 THEN COALESCE($3, refresh_token_sealed) ELSE refresh_token_sealed END
       WHERE id = $1`,
      [id, confirmed !== null, confirmed?.refreshTokenSealed ?? null],
    );
  }

  /** Upstream sessions a day old that no sign-in, code, session or grant refers to any more. Up to `limit` rows; returns how many were deleted (a housekeeping purge). */
  async purgeExpired(limit: number): Promise<number> {
    const [, deleted]: [unknown, number] = await this.dataSource.query(
      `DELETE FROM upstream_sessions s WHERE s.id IN (SELECT id FROM upstream_sessions u WHERE u.created_at < now() - interval '1 day'
         AND NOT EXISTS (SELECT 1 FROM grants WHERE upstream_session_id = u.id) AND NOT EXISTS (SELECT 1 FROM authorizations WHERE upstream_session_id = u.id)
         AND NOT EXISTS (SELECT 1 FROM browser_sessions WHERE upstream_session_id = u.id)
         AND NOT EXISTS (SELECT 1 FROM authorization_codes WHERE upstream_session_id = u.id) AND NOT EXISTS (SELECT 1 FROM device_codes WHERE upstream_session_id = u.id)
         LIMIT $1)`,
      [limit],
    );
    return deleted;
  }
}
