import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import type { Actor } from './actor.js';
import type { AdminChange, AuditDetail } from './admin-change.js';

/** One recorded change, as events:list and GET /admin/v1/events show it. */
export interface AuditEventView {
  id: string;
  at: string;
  actor: { kind: 'operator'; name: string } | { kind: 'client'; client_id: string };
  action: string;
  client_id: string | null;
  username: string | null;
  target: string | null;
  details: Record<string, AuditDetail>;
}

/** Which events to list: each filter given narrows the list; `after` pages (newest first, ids below it). */
export interface AuditEventFilter {
  username?: string;
  /** Events about this client, or made by it. */
  clientId?: string;
  since?: Date;
  after?: string;
  limit: number;
}

interface AuditEventRow {
  id: string;
  at: Date;
  actor_kind: 'operator' | 'client';
  actor: string;
  action: string;
  client_id: string | null;
  username: string | null;
  target: string | null;
  details: Record<string, AuditDetail>;
}

/** The audit_events table: appended to in the transactions of the changes, read newest first, purged by age. */
@Injectable()
export class AuditEventsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async insert(manager: EntityManager, actor: Actor, change: AdminChange): Promise<void> {
    await manager.query(
      `INSERT INTO audit_events (actor_kind, actor, action, client_id, username, target, details) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        actor.kind,
        actor.kind === 'operator' ? actor.name : actor.clientId,
        change.action,
        change.clientId ?? null,
        change.username ?? null,
        change.target ?? null,
        JSON.stringify(change.details ?? {}),
      ],
    );
  }

  async list(filter: AuditEventFilter): Promise<AuditEventView[]> {
    const rows: AuditEventRow[] = await this.dataSource.query(
      `SELECT id::text, at, actor_kind, actor, action, client_id, username, target, details FROM audit_events
       WHERE ($1::text IS NULL OR lower(username) = lower($1))
         AND ($2::text IS NULL OR client_id = $2 OR (actor_kind = 'client' AND actor = $2))
         AND ($3::timestamptz IS NULL OR at >= $3)
         AND ($4::bigint IS NULL OR id < $4)
       ORDER BY id DESC LIMIT $5`,
      [filter.username ?? null, filter.clientId ?? null, filter.since ?? null, filter.after ?? null, filter.limit],
    );
    return rows.map(toView);
  }

  /** Deletes up to `limit` events older than `retentionSeconds`; how many it deleted. */
  async purgeOlderThan(retentionSeconds: number, limit: number): Promise<number> {
    const [, deleted] = (await this.dataSource.query(
      `DELETE FROM audit_events WHERE id IN (SELECT id FROM audit_events WHERE at < now() - make_interval(secs => $1) ORDER BY id LIMIT $2)`,
      [retentionSeconds, limit],
    )) as [unknown, number];
    return deleted;
  }
}

function toView(row: AuditEventRow): AuditEventView {
  return {
    id: row.id,
    at: row.at.toISOString(),
    actor: row.actor_kind === 'operator' ? { kind: 'operator', name: row.actor } : { kind: 'client', client_id: row.actor },
    action: row.action,
    client_id: row.client_id,
    username: row.username,
    target: row.target,
    details: row.details,
  };
}
