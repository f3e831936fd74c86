import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PreparedStatement } from '../../database/prepared-statement.js';
import type { CursorSave } from './cursor-book.js';

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

/** A connection that is starting, and when it opened. */
export interface DeliveryStartRequest {
  clientId: string;
  /** When the connection opened, by this process's clock (Date.now()). */
  openedAt: number;
}

/** The stored cursor as a starting connection may use it, and the hold it found (to release). */
export interface DeliveryStart {
  deliveredSeq: number;
  heldSeq?: number;
}

/** A resuming connection's client, and the seq it resumes after. */
export interface ResumeFactsRequest {
  clientId: string;
  fromSeq: number;
}

export interface ResumeFacts {
  epoch: string;
  latestSeq: number;
  /** Something after the resume position has expired (deleted by retention or about to be). */
  incomplete: boolean;
}

/** The reads of `after` (migration 1795501000000: a function that keeps one generic plan). */
const READ_AFTER = new PreparedStatement<{ position: string; seq: string; payload: string; stored_at: string }>(
  'delivery-read-after',
  'SELECT "position", seq, payload, stored_at FROM delivery_read_after($1, $2, $3)',
);

/** How long a publish may take from its insert to its commit, as far as deliveryStarts is concerned. */
const COMMIT_MARGIN_MS = 1_000;

/**
 * The delivery's statements: it reads the notifications the publish wing stores (never writes
 * them), and it alone writes the clients' cursors (delivery_cursors).
 */
@Injectable()
export class DeliveryRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * For each resuming connection, from `fromSeq`: the database's epoch, the highest seq the
   * recipient ever had here (kept or expired: a position beyond it is not from this database),
   * and whether something after `fromSeq` has expired. Notifications expire in seq order, so
   * the first one after `fromSeq` tells (one index probe), or the highest deleted seq does.
   */
  async resumeFacts(requests: ResumeFactsRequest[]): Promise<ResumeFacts[]> {
    const rows: { position: string; epoch: string; latest_seq: string; incomplete: boolean }[] = await this.dataSource.query(
      `SELECT r.position, (SELECT epoch FROM notification_epoch) AS epoch,
         GREATEST(coalesce(x.expired_through_seq, 0), coalesce((SELECT max(seq) FROM notifications n WHERE n.recipient = r.client_id), 0)) AS latest_seq,
         (coalesce(x.expired_through_seq, 0) > r.from_seq
          OR coalesce((SELECT n.expires_at <= now() FROM notifications n WHERE n.recipient = r.client_id AND n.seq > r.from_seq ORDER BY n.seq LIMIT 1), false)) AS incomplete
       FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS r (client_id, from_seq, position)
       LEFT JOIN notification_expiries x ON x.client_id = r.client_id
       ORDER BY r.position`,
      [requests.map((request) => request.clientId), requests.map((request) => request.fromSeq)],
    );
    return rows.map((row) => ({ epoch: row.epoch, latestSeq: Number(row.latest_seq), incomplete: row.incomplete }));
  }

  /**
   * For each request, the recipient's retained notifications after `seq`, in publish order: one
   * round trip for all the recipients a burst of publishes woke.
   */
  async after(requests: ReadAfter[]): Promise<StoredNotification[][]> {
    const rows = await READ_AFTER.run(this.dataSource, [
      requests.map((request) => request.recipient),
      requests.map((request) => request.seq),
      requests.map((request) => request.limit),
    ]);
    const results: StoredNotification[][] = requests.map(() => []);
    for (const row of rows) results[Number(row.position) - 1].push({ seq: Number(row.seq), payload: row.payload, storedAt: Number(row.stored_at) });
    return results;
  }

  /**
   * Where each starting connection begins: the client's cursor, never past a hold (a connection
   * that closed unread; the starting connection takes it over, so it is released), and never past
   * what existed when the connection opened. The last rule matters when the cursor moved while
   * this read was on its way (another connection confirmed something published after this one
   * opened): the cursor is then capped by the notifications created before the opening
   * (how long ago it opened, measured as this statement is sent, less a margin for commit
   * latency), so the new connection is sent those again rather than missing one. The age is
   * measured once a connection is in hand: a wait for a free one (all busy behind a lock, say)
   * would otherwise move `opened_at` later, past a cursor moved meanwhile.
   */
  async deliveryStarts(requests: DeliveryStartRequest[]): Promise<DeliveryStart[]> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    const sentAt = Date.now();
    const rows: { position: string; start_seq: string; held_seq: string | null }[] = await runner.query(
      `WITH asked AS (
         SELECT client_id, position, statement_timestamp() - make_interval(secs => opened_ms_ago / 1000.0) AS opened_at
         FROM unnest($1::text[], $2::float8[]) WITH ORDINALITY AS r (client_id, opened_ms_ago, position)),
       found AS (
         SELECT a.position, a.client_id, c.held_seq,
           CASE WHEN c.updated_at < a.opened_at THEN c.delivered_seq
                ELSE LEAST(c.delivered_seq, (
                  SELECT coalesce(max(n.seq), 0) FROM notifications n
                  WHERE n.recipient = a.client_id AND n.created_at < a.opened_at - interval '${COMMIT_MARGIN_MS} milliseconds'))
           END AS start_seq
         FROM asked a JOIN delivery_cursors c USING (client_id)),
       released AS (
         UPDATE delivery_cursors c SET held_seq = NULL FROM found f
         WHERE c.client_id = f.client_id AND c.held_seq = f.held_seq)
       SELECT position, start_seq, held_seq FROM found`,
      [requests.map((request) => request.clientId), requests.map((request) => sentAt - request.openedAt)],
    ).finally(() => runner.release());
    const starts: DeliveryStart[] = requests.map(() => ({ deliveredSeq: 0 }));
    for (const row of rows) {
      starts[Number(row.position) - 1] = { deliveredSeq: Number(row.start_seq), ...(row.held_seq !== null && { heldSeq: Number(row.held_seq) }) };
    }
    return starts;
  }

  /**
   * Moves cursors forward only (instances may confirm out of order) and keeps the lowest hold.
   * Cursors of clients deleted meanwhile are skipped; rows are written in one order everywhere so
   * instances saving together never deadlock.
   */
  async saveCursors(saves: CursorSave[]): Promise<void> {
    if (saves.length === 0) return;
    await this.dataSource.query(
      `INSERT INTO delivery_cursors (client_id, delivered_seq, held_seq)
       SELECT s.client_id, s.delivered_seq, s.held_seq FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS s (client_id, delivered_seq, held_seq)
       WHERE EXISTS (SELECT 1 FROM clients WHERE id = s.client_id AND deleted_at IS NULL)
       ORDER BY s.client_id
       ON CONFLICT (client_id) DO UPDATE SET
         delivered_seq = GREATEST(delivery_cursors.delivered_seq, EXCLUDED.delivered_seq),
         held_seq = LEAST(delivery_cursors.held_seq, EXCLUDED.held_seq),
         updated_at = CASE WHEN EXCLUDED.delivered_seq > delivery_cursors.delivered_seq THEN now() ELSE delivery_cursors.updated_at END`,
      [saves.map((save) => save.clientId), saves.map((save) => save.deliveredSeq), saves.map((save) => save.heldSeq)],
    );
  }
}
