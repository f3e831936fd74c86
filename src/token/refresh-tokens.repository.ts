import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';

export interface RefreshTokenRow {
  grant_id: string;
  client_id: string;
  user_id: string;
  scope: string | null;
  expires_at: Date;
  rotated_at: Date | null;
  grant_revoked_at: Date | null;
}

@Injectable()
export class RefreshTokensRepository {
  async insert(manager: EntityManager, token: { tokenHash: Buffer; grantId: string; clientId: string; expiresAt: Date }): Promise<void> {
    await manager.query('INSERT INTO refresh_tokens (token_hash, grant_id, client_id, expires_at) VALUES ($1, $2, $3, $4)', [
      token.tokenHash,
      token.grantId,
      token.clientId,
      token.expiresAt,
    ]);
  }

  /** The token with its grant, locked: of two concurrent refreshes, the second waits and sees the first's rotation. */
  async lock(manager: EntityManager, tokenHash: Buffer): Promise<RefreshTokenRow | undefined> {
    const [row] = await manager.query(
      `SELECT r.grant_id, r.client_id, g.user_id, g.scope, r.expires_at, r.rotated_at, g.revoked_at AS grant_revoked_at
       FROM refresh_tokens r JOIN grants g ON g.id = r.grant_id
       WHERE r.token_hash = $1 FOR UPDATE OF r`,
      [tokenHash],
    );
    return row;
  }

  async markRotated(manager: EntityManager, tokenHash: Buffer): Promise<void> {
    await manager.query('UPDATE refresh_tokens SET rotated_at = now() WHERE token_hash = $1', [tokenHash]);
  }

  /** For introspection and revocation: the token's grant and client, without locking. */
  async find(manager: EntityManager, tokenHash: Buffer): Promise<RefreshTokenRow | undefined> {
    const [row] = await manager.query(
      `SELECT r.grant_id, r.client_id, g.user_id, g.scope, r.expires_at, r.rotated_at, g.revoked_at AS grant_revoked_at
       FROM refresh_tokens r JOIN grants g ON g.id = r.grant_id WHERE r.token_hash = $1`,
      [tokenHash],
    );
    return row;
  }
}
