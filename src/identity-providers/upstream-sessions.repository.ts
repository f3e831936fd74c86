import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';

/** A brokered sign-in's link to its provider, as the refresh re-check reads it. */
export interface UpstreamSession {
  id: string;
  provider: string;
  refreshTokenSealed: Buffer | null;
  /** Whether IDP_RECHECK_INTERVAL has passed since the last check. */
  due: boolean;
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

  /** The session of a grant, locked until the caller's transaction ends (one re-check at a time). */
  async lockOfGrant(manager: EntityManager, grantId: string, recheckIntervalSeconds: number): Promise<UpstreamSession | undefined> {
    const [row]: { id: string; provider: string; refresh_token_sealed: Buffer | null; due: boolean }[] = await manager.query(
      `SELECT s.id, s.provider, s.refresh_token_sealed, s.checked_at <= now() - make_interval(secs => $2) AS due
       FROM grants g JOIN upstream_sessions s ON s.id = g.upstream_session_id WHERE g.id = $1 FOR UPDATE OF s`,
      [grantId, recheckIntervalSeconds],
    );
    return row && { id: row.id, provider: row.provider, refreshTokenSealed: row.refresh_token_sealed, due: row.due };
  }

  /** The provider confirmed the user: the time, and its rotated refresh token if it gave one. */
  async checked(manager: EntityManager, id: string, refreshTokenSealed: Buffer | null): Promise<void> {
    await manager.query('UPDATE upstream_sessions SET checked_at = now(), refresh_token_sealed = COALESCE($2, refresh_token_sealed) WHERE id = $1', [id, refreshTokenSealed]);
  }
}
