import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { USER_ACCESS_TOKEN_TTL } from '../config/env.js';
import type { GrantFlow } from './grant.js';
import { grantAddress } from './grant-address.js';

export interface LiveGrant {
  grant_id: string;
  client_id: string;
  client_name: string;
  scope: string | null;
  flow: GrantFlow;
  created_at: Date;
  created_address: string | null;
  last_refreshed_at: Date | null;
  last_refreshed_address: string | null;
  expires_at: Date | null;
}

/** A grant about to be revoked by its id, locked, with whose it is. */
export interface LockedGrant {
  id: string;
  user_id: string;
  username: string;
  client_id: string;
  revoked_at: Date | null;
}

/** Grants: the family of tokens one sign-in produced; revoking it ends them all (GrantRevocationsService). */
@Injectable()
export class GrantsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * `signIn`: when the user signed in, and in which browser session (the ID tokens' auth_time and
   * sid); by default now, and none. `address`: the requester's, whom the grant is issued to.
   */
  async create(
    manager: EntityManager,
    grant: {
      clientId: string;
      userId: string;
      scope: string | null;
      flow: GrantFlow;
      upstreamSessionId?: string | null;
      signIn?: { authTime: Date; sid: string | null };
      address: string;
    },
  ): Promise<string> {
    const [row] = await manager.query(
      'INSERT INTO grants (client_id, user_id, scope, flow, upstream_session_id, auth_time, sid, created_address) VALUES ($1, $2, $3, $4, $5, COALESCE($6, now()), $7, $8) RETURNING id',
      [grant.clientId, grant.userId, grant.scope, grant.flow, grant.upstreamSessionId ?? null, grant.signIn?.authTime ?? null, grant.signIn?.sid ?? null, grantAddress(grant.address)],
    );
    return row.id;
  }

  /**
   * A user's live grants (their signed-in devices), oldest first, with the client's name: where
   * from it was made, when and where from the last refresh happened (the address of the refresh
   * that retired the latest rotated token), and when the grant lapses unless refreshed (its live
   * refresh token's expiry). Addresses are null for grants and refreshes older than their columns.
   */
  async liveOfUser(userId: string): Promise<LiveGrant[]> {
    return this.dataSource.query(
      `SELECT g.id AS grant_id, g.client_id, c.name AS client_name, g.scope, g.flow, g.created_at, host(g.created_address) AS created_address,
              max(r.rotated_at) AS last_refreshed_at,
              host((array_agg(r.rotated_address ORDER BY r.rotated_at DESC, r.issued_at DESC) FILTER (WHERE r.rotated_at IS NOT NULL))[1]) AS last_refreshed_address,
              max(r.expires_at) FILTER (WHERE r.rotated_at IS NULL) AS expires_at
       FROM grants g JOIN clients c ON c.id = g.client_id LEFT JOIN refresh_tokens r ON r.grant_id = g.id
       WHERE g.user_id = $1 AND g.revoked_at IS NULL
       GROUP BY g.id, c.name ORDER BY g.created_at, g.id`,
      [userId],
    );
  }

  /**
   * The grant with this id and its user, its row locked as a revocation locks it (the refresh's
   * slow path takes the same lock), so what is checked of it holds until the transaction ends.
   */
  async lockById(manager: EntityManager, grantId: string): Promise<LockedGrant | undefined> {
    const [row] = await manager.query(
      `SELECT g.id, g.user_id, u.username, g.client_id, g.revoked_at FROM grants g JOIN portal_users u ON u.id = g.user_id
       WHERE g.id = $1 FOR NO KEY UPDATE OF g`,
      [grantId],
    );
    return row;
  }

  /** Whether the grant exists and is not revoked (a purged grant no longer has live tokens). */
  async isActive(grantId: string): Promise<boolean> {
    const rows = await this.dataSource.query('SELECT 1 FROM grants WHERE id = $1 AND revoked_at IS NULL', [grantId]);
    return rows.length > 0;
  }

  /**
   * Deletes up to `limit` grants with nothing left alive: no refresh token (purged after it
   * expired), and older than any access token it issued. Returns how many it deleted.
   */
  async purgeSpent(limit: number): Promise<number> {
    const [, deleted]: [unknown, number] = await this.dataSource.query(
      `DELETE FROM grants g WHERE g.id IN (SELECT id FROM grants WHERE created_at < now() - interval '${USER_ACCESS_TOKEN_TTL} seconds'
         AND NOT EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.grant_id = grants.id) LIMIT $1)`,
      [limit],
    );
    return deleted;
  }
}
