import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';

export type RelayedKind = 'access_token' | 'refresh_token';

/** relayed_tokens: the provider's tokens the service handed to a device, by hash, with the client they belong to. */
@Injectable()
export class RelayedTokensRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Records what is handed to `clientId`, in the caller's transaction (the hand-over's). */
  async record(manager: EntityManager, tokens: { hash: Buffer; kind: RelayedKind; lifetimeSeconds: number }[], clientId: string, provider: string): Promise<void> {
    for (const token of tokens) {
      await manager.query(
        `INSERT INTO relayed_tokens (token_hash, kind, client_id, provider, expires_at) VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))
         ON CONFLICT (token_hash) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE relayed_tokens.client_id = EXCLUDED.client_id`,
        [token.hash, token.kind, clientId, provider, token.lifetimeSeconds],
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

  async forget(manager: EntityManager, hash: Buffer): Promise<void> {
    await manager.query('DELETE FROM relayed_tokens WHERE token_hash = $1', [hash]);
  }
}
