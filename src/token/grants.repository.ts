import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';

/** Grants: the family of tokens one sign-in produced; revoking it ends them all. */
@Injectable()
export class GrantsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async create(manager: EntityManager, grant: { clientId: string; userId: string; scope: string | null }): Promise<string> {
    const [row] = await manager.query('INSERT INTO grants (client_id, user_id, scope) VALUES ($1, $2, $3) RETURNING id', [
      grant.clientId,
      grant.userId,
      grant.scope,
    ]);
    return row.id;
  }

  async revoke(manager: EntityManager, grantId: string): Promise<void> {
    await manager.query('UPDATE grants SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL', [grantId]);
  }

  /** Whether the grant exists and is not revoked (a purged grant no longer has live tokens). */
  async isActive(grantId: string): Promise<boolean> {
    const rows = await this.dataSource.query('SELECT 1 FROM grants WHERE id = $1 AND revoked_at IS NULL', [grantId]);
    return rows.length > 0;
  }
}
