import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/** The channel that wakes every instance after a publish commits; its payload is the recipient. */
export const NOTIFICATION_CHANNEL = 'vc_notification';
/** First key of the per-recipient publish lock (the second is the recipient's hash); any constant unused elsewhere. */
const PUBLISH_LOCK_CLASS = 7_042_002;

export interface NewNotification {
  recipient: string;
  correlationId: string;
  status: string;
  payload: string;
  publishedBy: string | null;
  expiresAt: Date;
}

export interface StoredNotification {
  seq: number;
  payload: string;
  /** When it was stored, in epoch milliseconds (for the publish-to-push latency). */
  storedAt: number;
}

@Injectable()
export class NotificationsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Stores the notification and wakes the instances (NOTIFY is delivered at commit), once per
   * (recipient, correlation id, status): a repeated publish returns the stored id.
   *
   * A recipient's publishes are serialised by a transaction-scoped advisory lock, so their `seq`
   * order is their commit order. Without it, two concurrent publishes could commit out of seq
   * order, and a reader that already sent the higher seq (its cursor) would skip the lower one
   * for good.
   */
  async insert(notification: NewNotification): Promise<{ id: string; stored: boolean }> {
    const params = [notification.recipient, notification.correlationId, notification.status];
    return this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [PUBLISH_LOCK_CLASS, notification.recipient]);
      const inserted: { id: string }[] = await manager.query(
        `WITH inserted AS (
           INSERT INTO notifications (recipient, correlation_id, status, payload, published_by, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (recipient, correlation_id, status) DO NOTHING
           RETURNING id, recipient)
         SELECT id, pg_notify('${NOTIFICATION_CHANNEL}', recipient) FROM inserted`,
        [...params, notification.payload, notification.publishedBy, notification.expiresAt],
      );
      if (inserted.length > 0) return { id: inserted[0].id, stored: true };
      const [existing] = await manager.query(
        'SELECT id FROM notifications WHERE recipient = $1 AND correlation_id = $2 AND status = $3',
        params,
      );
      return { id: existing.id, stored: false };
    });
  }

  /** The recipient's retained notifications after `seq`, in publish order. */
  async after(recipient: string, seq: number, limit: number): Promise<StoredNotification[]> {
    const rows: { seq: string; payload: string; stored_at: string }[] = await this.dataSource.query(
      `SELECT seq, payload, (extract(epoch FROM created_at) * 1000)::bigint AS stored_at FROM notifications
       WHERE recipient = $1 AND seq > $2 AND expires_at > now() ORDER BY seq LIMIT $3`,
      [recipient, seq, limit],
    );
    return rows.map((row) => ({ seq: Number(row.seq), payload: row.payload, storedAt: Number(row.stored_at) }));
  }

  /** The recipient's retained notifications published at or after `since`, oldest first. */
  async publishedSince(recipient: string, since: Date, limit: number): Promise<string[]> {
    const rows: { payload: string }[] = await this.dataSource.query(
      `SELECT payload FROM notifications
       WHERE recipient = $1 AND created_at >= $2 AND expires_at > now() ORDER BY seq LIMIT $3`,
      [recipient, since, limit],
    );
    return rows.map((row) => row.payload);
  }

  async deliveredSeq(recipient: string): Promise<number> {
    const [row] = await this.dataSource.query('SELECT delivered_seq FROM delivery_cursors WHERE client_id = $1', [recipient]);
    return row ? Number(row.delivered_seq) : 0;
  }

  /** Moves cursors forward only: instances may confirm out of order. */
  async saveDeliveredSeqs(cursors: Map<string, number>): Promise<void> {
    if (cursors.size === 0) return;
    await this.dataSource.query(
      `INSERT INTO delivery_cursors (client_id, delivered_seq)
       SELECT * FROM unnest($1::text[], $2::bigint[])
       ON CONFLICT (client_id) DO UPDATE
         SET delivered_seq = GREATEST(delivery_cursors.delivered_seq, EXCLUDED.delivered_seq), updated_at = now()`,
      [[...cursors.keys()], [...cursors.values()]],
    );
  }
}
