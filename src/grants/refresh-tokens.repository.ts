import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { USER_ACCESS_TOKEN_TTL } from '../config/env.js';
import { PreparedStatement } from '../database/prepared-statement.js';
import { type IdTokenFacts, idTokenFactsSql } from '../token/id-tokens.service.js';
import type { GrantFlow } from './grant.js';
import { grantAddress } from './grant-address.js';
import { currentScopeSql, issuedAfterStampSql } from './revocations.js';

export interface RefreshTokenRow {
  grant_id: string;
  client_id: string;
  user_id: string;
  scope: string | null;
  flow: GrantFlow;
  expires_at: Date;
  /** By the database's clock, as every expiry. */
  expired: boolean;
  rotated_at: Date | null;
  grant_revoked_at: Date | null;
}

/** A refresh token as the refresh grant sees it, under its locks. */
export interface LockedRefreshToken extends RefreshTokenRow {
  rotated_within_grace: boolean;
  /** The grant's scope narrowed to the client's current scopes (a scope taken from the client is not issued again). */
  current_scope: string | null;
  /** The grant's user may still be issued tokens from it (enabled, not signed out since the grant). */
  user_issuable: boolean;
}

const COLUMNS = 'r.grant_id, r.client_id, g.user_id, g.scope, g.flow, r.expires_at, r.expires_at <= now() AS expired, r.rotated_at, g.revoked_at AS grant_revoked_at';

/**
 * The issuing statement of a refresh (revocations.ts): the grant's row locked shared, so a
 * revocation of the grant committed meanwhile (every sign-out revokes the grants it ends) is
 * seen; the user is checked too, and the new tokens carry the client's current scopes only. What
 * the ID token says is read here too: a failure to read it retires nothing. A brokered grant due
 * for a re-check at its provider is left to the caller's slow path. The retired token keeps the
 * address of the refresh that retired it (`rotated_address`): the grant's last refresh's address,
 * written in the update the rotation makes anyway.
 */
const ROTATE = new PreparedStatement<RotatedRefreshToken>(
  'rotate-refresh-token',
  `WITH live_grant AS (
     SELECT g.id, g.user_id, g.scope, g.flow, ${idTokenFactsSql('COALESCE(g.auth_time, g.created_at)', 'g.sid')}
     FROM grants g JOIN portal_users u ON u.id = g.user_id
     WHERE g.id = (SELECT grant_id FROM refresh_tokens WHERE token_hash = $1) AND g.revoked_at IS NULL
       AND u.disabled_at IS NULL AND ${issuedAfterStampSql('g.created_at')}
       AND NOT EXISTS (SELECT 1 FROM upstream_sessions s WHERE s.id = g.upstream_session_id AND s.checked_at <= now() - make_interval(secs => $5))
     FOR SHARE OF g),
   rotated AS (
     UPDATE refresh_tokens r SET rotated_at = now(), rotated_address = $6::inet
     FROM live_grant g
     WHERE r.token_hash = $1 AND r.client_id = $2 AND r.rotated_at IS NULL AND r.expires_at > now() AND g.id = r.grant_id
     RETURNING r.grant_id, g.user_id, ${currentScopeSql('g.scope', '$2')} AS scope, g.flow, g.auth_time, g.sid, g.username, g.upstream_issuer, g.profile, g.profile_updated_at),
   successor AS (
     INSERT INTO refresh_tokens (token_hash, grant_id, client_id, expires_at) SELECT $3, grant_id, $2, now() + make_interval(secs => $4) FROM rotated)
   SELECT * FROM rotated`,
);

/** A rotated token's grant, and what its ID token says, read in the rotating statement. */
export type RotatedRefreshToken = Pick<RefreshTokenRow, 'grant_id' | 'user_id' | 'scope' | 'flow'> & Omit<IdTokenFacts, 'alg' | 'user_id'>;

@Injectable()
export class RefreshTokensRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async insert(manager: EntityManager, token: { tokenHash: Buffer; grantId: string; clientId: string; lifetimeSeconds: number }): Promise<void> {
    await manager.query('INSERT INTO refresh_tokens (token_hash, grant_id, client_id, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4))', [
      token.tokenHash,
      token.grantId,
      token.clientId,
      token.lifetimeSeconds,
    ]);
  }

  /**
   * The token with its grant, locked: of two concurrent refreshes, the second waits and sees the
   * first's rotation. The grant's row is locked as in ROTATE, and for the revocation this path
   * may make, so two replays of one grant's old tokens queue instead of deadlocking.
   * `rotated_within_grace`: rotated less than `graceSeconds` ago.
   */
  async lock(manager: EntityManager, tokenHash: Buffer, graceSeconds: number): Promise<LockedRefreshToken | undefined> {
    const [row] = await manager.query(
      `SELECT ${COLUMNS}, coalesce(r.rotated_at > now() - make_interval(secs => $2), false) AS rotated_within_grace,
         ${currentScopeSql('g.scope', 'r.client_id')} AS current_scope,
         (u.disabled_at IS NULL AND ${issuedAfterStampSql('g.created_at')}) AS user_issuable
       FROM refresh_tokens r JOIN grants g ON g.id = r.grant_id JOIN portal_users u ON u.id = g.user_id
       WHERE r.token_hash = $1 FOR UPDATE OF r FOR NO KEY UPDATE OF g`,
      [tokenHash, graceSeconds],
    );
    return row;
  }

  /**
   * The usual refresh in one statement (one round trip, its own transaction): rotates a live,
   * unused token of a live grant of this client and stores its successor. Undefined when any of
   * that does not hold, or when a concurrent refresh rotated it first (the row lock makes this
   * one wait and re-check); the caller then works out why under a lock.
   */
  async rotate(
    dataSource: DataSource,
    rotation: { tokenHash: Buffer; clientId: string; successorHash: Buffer; successorLifetimeSeconds: number; recheckIntervalSeconds: number; address: string },
  ): Promise<RotatedRefreshToken | undefined> {
    const [row] = await ROTATE.run(dataSource, [
      rotation.tokenHash,
      rotation.clientId,
      rotation.successorHash,
      rotation.successorLifetimeSeconds,
      rotation.recheckIntervalSeconds,
      grantAddress(rotation.address),
    ]);
    return row;
  }

  /** `address`: the requester's, whose refresh retires the token (see ROTATE). */
  async markRotated(manager: EntityManager, tokenHash: Buffer, address: string): Promise<void> {
    await manager.query('UPDATE refresh_tokens SET rotated_at = now(), rotated_address = $2 WHERE token_hash = $1', [tokenHash, grantAddress(address)]);
  }

  /** The live grant a usable refresh token of this client belongs to (no lock): a re-check at the provider is worth asking for it only. */
  async usableGrant(manager: EntityManager, tokenHash: Buffer, clientId: string): Promise<{ grant_id: string; user_id: string } | undefined> {
    const [row] = await manager.query(
      `SELECT r.grant_id, g.user_id FROM refresh_tokens r JOIN grants g ON g.id = r.grant_id
       WHERE r.token_hash = $1 AND r.client_id = $2 AND r.rotated_at IS NULL AND r.expires_at > now() AND g.revoked_at IS NULL AND g.upstream_session_id IS NOT NULL`,
      [tokenHash, clientId],
    );
    return row;
  }

  /** For introspection and revocation: the token's grant and client, without locking. */
  async find(manager: EntityManager, tokenHash: Buffer): Promise<RefreshTokenRow | undefined> {
    const [row] = await manager.query(
      `SELECT ${COLUMNS} FROM refresh_tokens r JOIN grants g ON g.id = r.grant_id WHERE r.token_hash = $1`,
      [tokenHash],
    );
    return row;
  }

  /**
   * Deletes up to `limit` expired tokens, each kept until the access token issued with it has
   * expired too (REFRESH_TOKEN_TTL may be shorter than an access token's life): the grant purge,
   * which runs after this one, relies on that. Returns how many it deleted.
   */
  async purgeExpired(limit: number): Promise<number> {
    const [, deleted]: [unknown, number] = await this.dataSource.query(
      `DELETE FROM refresh_tokens WHERE ctid IN (SELECT ctid FROM refresh_tokens WHERE expires_at < now()
         AND issued_at < now() - interval '${USER_ACCESS_TOKEN_TTL} seconds' LIMIT $1)`,
      [limit],
    );
    return deleted;
  }
}
