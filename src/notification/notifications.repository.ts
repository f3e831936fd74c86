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

/** A stored (or already stored) notification's id, or a recipient that is not a registered client. */
export type InsertOutcome = { id: string; stored: boolean } | { unknownRecipient: true };

/** Up to `limit` of the recipient's notifications after `seq`. */
export interface ReadAfter {
  recipient: string;
  seq: number;
  limit: number;
}

export interface StoredNotification {
  seq: number;
  payload: string;
  /** When it was stored, in epoch milliseconds (for the publish-to-push latency). */
  storedAt: number;
}

const dedupeKey = (recipient: string, correlationId: string, status: string) => `${recipient}\n${correlationId}\n${status}`;

@Injectable()
export class NotificationsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Stores notifications in one transaction and wakes the instances once per recipient (NOTIFY
   * is delivered at commit). Each is stored once per (recipient, correlation id, status): a
   * repeated publish gets the stored id. Results are in the order of `batch`.
   *
   * Each recipient's publishes are serialised by a transaction-scoped advisory lock, so their
   * `seq` order is their commit order. Without it, two concurrent publishes could commit out of
   * seq order, and a reader that already sent the higher seq (its cursor) would skip the lower
   * one for good. The locks are taken in one order everywhere, so batches never deadlock.
   */
  async insertBatch(batch: NewNotification[]): Promise<InsertOutcome[]> {
    const recipients = batch.map((notification) => notification.recipient);
    return this.dataSource.transaction(async (manager) => {
      await manager.query(
        `SELECT pg_advisory_xact_lock($1, key) FROM (SELECT DISTINCT hashtext(recipient) AS key FROM unnest($2::text[]) AS recipient ORDER BY key) AS keys`,
        [PUBLISH_LOCK_CLASS, recipients],
      );
      // In batch order (seq follows it); unknown recipients are left out rather than failing the batch.
      const inserted: { id: string; recipient: string; correlation_id: string; status: string }[] = await manager.query(
        `INSERT INTO notifications (recipient, correlation_id, status, payload, published_by, expires_at)
         SELECT n.recipient, n.correlation_id, n.status, n.payload, n.published_by, n.expires_at
         FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::timestamptz[]) WITH ORDINALITY
           AS n (recipient, correlation_id, status, payload, published_by, expires_at, position)
         WHERE EXISTS (SELECT 1 FROM clients WHERE id = n.recipient)
         ORDER BY n.position
         ON CONFLICT (recipient, correlation_id, status) DO NOTHING
         RETURNING id, recipient, correlation_id, status`,
        [
          recipients,
          batch.map((notification) => notification.correlationId),
          batch.map((notification) => notification.status),
          batch.map((notification) => notification.payload),
          batch.map((notification) => notification.publishedBy),
          batch.map((notification) => notification.expiresAt),
        ],
      );
      const woken = [...new Set(inserted.map((row) => row.recipient))];
      if (woken.length > 0) await manager.query(`SELECT pg_notify('${NOTIFICATION_CHANNEL}', recipient) FROM unnest($1::text[]) AS recipient`, [woken]);

      const storedIds = new Map(inserted.map((row) => [dedupeKey(row.recipient, row.correlation_id, row.status), row.id]));
      // Not inserted: a repeat of what is stored, or a recipient that is not a client.
      const notInserted: { index: number; notification: NewNotification }[] = [];
      const outcomes = batch.map((notification, index): InsertOutcome => {
        const key = dedupeKey(notification.recipient, notification.correlationId, notification.status);
        const id = storedIds.get(key);
        if (id === undefined) {
          notInserted.push({ index, notification });
          return { unknownRecipient: true };
        }
        storedIds.delete(key); // a repeat later in this batch gets this id with stored: false
        return { id, stored: true };
      });
      // Repeats of what is already stored (before, or earlier in this batch) get the stored id.
      if (notInserted.length > 0) {
        const existing: { id: string; position: number }[] = await manager.query(
          `SELECT s.id, n.position FROM unnest($1::text[], $2::uuid[], $3::text[], $4::int[]) AS n (recipient, correlation_id, status, position)
           JOIN notifications s USING (recipient, correlation_id, status)`,
          [
            notInserted.map(({ notification }) => notification.recipient),
            notInserted.map(({ notification }) => notification.correlationId),
            notInserted.map(({ notification }) => notification.status),
            notInserted.map(({ index }) => index),
          ],
        );
        for (const row of existing) outcomes[row.position] = { id: row.id, stored: false };
      }
      return outcomes;
    });
  }

  /**
   * For each request, the recipient's retained notifications after `seq`, in publish order: one
   * round trip for all the recipients a burst of publishes woke.
   */
  async after(requests: ReadAfter[]): Promise<StoredNotification[][]> {
    const rows: { position: number; seq: string; payload: string; stored_at: string }[] = await this.dataSource.query(
      `SELECT r.position, n.seq, n.payload, (extract(epoch FROM n.created_at) * 1000)::bigint AS stored_at
       FROM unnest($1::text[], $2::bigint[], $3::int[]) WITH ORDINALITY AS r (recipient, after_seq, max_rows, position)
       CROSS JOIN LATERAL (
         SELECT seq, payload, created_at FROM notifications
         WHERE recipient = r.recipient AND seq > r.after_seq AND expires_at > now() ORDER BY seq LIMIT r.max_rows) AS n
       ORDER BY r.position, n.seq`,
      [requests.map((request) => request.recipient), requests.map((request) => request.seq), requests.map((request) => request.limit)],
    );
    const results: StoredNotification[][] = requests.map(() => []);
    for (const row of rows) results[Number(row.position) - 1].push({ seq: Number(row.seq), payload: row.payload, storedAt: Number(row.stored_at) });
    return results;
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

  /** Each recipient's delivery cursor (0 before its first delivery), in the order asked. */
  async deliveredSeqs(recipients: string[]): Promise<number[]> {
    const rows: { client_id: string; delivered_seq: string }[] = await this.dataSource.query(
      'SELECT client_id, delivered_seq FROM delivery_cursors WHERE client_id = ANY($1)',
      [recipients],
    );
    const cursors = new Map(rows.map((row) => [row.client_id, Number(row.delivered_seq)]));
    return recipients.map((recipient) => cursors.get(recipient) ?? 0);
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
