import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { randomToken, sha256 } from '../common/crypto/opaque-token.js';
import { Env } from '../config/env.js';
import { issuableUserCte } from '../grants/revocations.js';
import type { UserEntity } from '../users/user.entity.js';

/** A live browser session, with what the pages and the approval need of its user. */
export interface BrowserSession {
  id: string;
  /** Public: the `sid` of the ID tokens issued within it. */
  sid: string;
  authTime: Date;
  upstreamSessionId: string | null;
  user: Pick<UserEntity, 'id' | 'username' | 'profile' | 'tokensValidAfter' | 'provider'>;
}

/**
 * browser_sessions: a browser's sign-in at the service. A session is live while it is neither
 * ended (logout) nor expired (SESSION_TTL), and its user is enabled and was not signed out since
 * it began (the revocation model's stamp, src/grants/revocations.ts): every sign-out that moves
 * the stamp ends the user's sessions with no write of its own.
 */
@Injectable()
export class BrowserSessionsRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly env: Env,
  ) {}

  /**
   * A session for a user who just signed in; the cookie's value (only its hash is kept).
   * `userStamp`: their tokens_valid_after as read when their sign-in was checked: a sign-out or a
   * disable since then (the password check takes a while) starts nothing (undefined), as it
   * refuses the approval (revocations.ts).
   */
  async start(user: { id: string; tokensValidAfter: Date | null }, upstreamSessionId: string | null): Promise<{ secret: string; session: BrowserSession } | undefined> {
    const secret = randomToken(32);
    const [row]: SessionRow[] = await this.dataSource.query(
      `WITH ${issuableUserCte('$3::uuid')},
       started AS (
         INSERT INTO browser_sessions (secret_hash, sid, user_id, upstream_session_id, auth_time, expires_at)
         SELECT $1, $2, u.id, $4, now(), now() + make_interval(secs => $5) FROM issuable_user u
         WHERE u.tokens_valid_after IS NOT DISTINCT FROM $6
         RETURNING id, sid, user_id, upstream_session_id, auth_time)
       SELECT s.id, s.sid, s.upstream_session_id, s.auth_time, u.id AS user_id, u.username, u.profile, u.tokens_valid_after, u.provider
       FROM started s JOIN portal_users u ON u.id = s.user_id`,
      [sha256(secret), randomToken(16), user.id, upstreamSessionId, this.env.SESSION_TTL, user.tokensValidAfter],
    );
    return row && { secret, session: toSession(row) };
  }

  /** The live session a cookie names, if any. */
  async find(secret: string | undefined): Promise<BrowserSession | undefined> {
    if (secret === undefined) return undefined;
    const [row]: SessionRow[] = await this.dataSource.query(
      `SELECT s.id, s.sid, s.upstream_session_id, s.auth_time, u.id AS user_id, u.username, u.profile, u.tokens_valid_after, u.provider
       FROM browser_sessions s JOIN portal_users u ON u.id = s.user_id
       WHERE s.secret_hash = $1 AND s.ended_at IS NULL AND s.expires_at > now()
         AND u.disabled_at IS NULL AND (u.tokens_valid_after IS NULL OR s.auth_time > u.tokens_valid_after)`,
      [sha256(secret)],
    );
    return row && toSession(row);
  }

  /** Ends the session a cookie names (logout); the ended session, if it was live. */
  async end(secret: string): Promise<{ sid: string; userId: string; upstreamSessionId: string | null } | undefined> {
    const [[row]]: [{ sid: string; user_id: string; upstream_session_id: string | null }[], number] = await this.dataSource.query(
      'UPDATE browser_sessions SET ended_at = now() WHERE secret_hash = $1 AND ended_at IS NULL AND expires_at > now() RETURNING sid, user_id, upstream_session_id',
      [sha256(secret)],
    );
    return row && { sid: row.sid, userId: row.user_id, upstreamSessionId: row.upstream_session_id };
  }

  /** Sessions past SESSION_TTL (an ended one is kept until then). Up to `limit` rows; returns how many were deleted (a housekeeping purge). */
  async purgeExpired(limit: number): Promise<number> {
    const [, deleted]: [unknown, number] = await this.dataSource.query(
      `DELETE FROM browser_sessions WHERE ctid IN (SELECT ctid FROM browser_sessions WHERE expires_at < now() LIMIT $1)`,
      [limit],
    );
    return deleted;
  }
}

interface SessionRow {
  id: string;
  sid: string;
  upstream_session_id: string | null;
  auth_time: Date;
  user_id: string;
  username: string;
  profile: UserEntity['profile'];
  tokens_valid_after: Date | null;
  provider: string | null;
}

const toSession = (row: SessionRow): BrowserSession => ({
  id: row.id,
  sid: row.sid,
  authTime: row.auth_time,
  upstreamSessionId: row.upstream_session_id,
  user: { id: row.user_id, username: row.username, profile: row.profile, tokensValidAfter: row.tokens_valid_after, provider: row.provider },
});
