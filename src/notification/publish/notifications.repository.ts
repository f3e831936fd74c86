import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { Env } from '../../config/env.js';
import { databaseUnavailableReason } from '../../common/errors/database-unavailable.js';
import { PreparedStatement } from '../../database/prepared-statement.js';
import { PreviousReleaseListenersService } from './previous-release-listeners.service.js';
import { PREVIOUS_RELEASE_CHANNEL, WAKE_CHANNEL, wakePayloads } from './wake-ups.js';

/** First key of the per-recipient publish lock (the second is the recipient's hash); any constant unused elsewhere. */
const PUBLISH_LOCK_CLASS = 7_042_002;
/**
 * How long a batch of several recipients waits for their locks. Other instances' transactions
 * hold them for milliseconds; a lock held longer is taken to be stuck.
 */
const SHARED_LOCK_WAIT_MS = 200;

export interface NewNotification {
  recipient: string;
  correlationId: string;
  status: string;
  payload: string;
  publishedBy: string | null;
  /** How long it is kept, from its insert (by the database's clock, as every expiry). */
  retentionSeconds: number;
  /** True once nobody waits for the answer (the request was answered by its deadline, or its client left): then it is not stored. */
  abandoned?: () => boolean;
}

/**
 * A stored (or already stored) notification's id, a recipient that is not a registered client, a
 * recipient whose publish lock another transaction holds, or a publish nobody waited for any more
 * (nothing was stored for the last two).
 */
export type InsertOutcome = { id: string; stored: boolean } | { unknownRecipient: true } | { recipientBusy: true } | { abandoned: true };

// A publish transaction's statements, prepared once per connection: planning them took as long as running them.

/** One recipient's lock, with lock_timeout $3 for the whole transaction (set first, in the FROM clause). */
const LOCK_ONE = new PreparedStatement(
  'publish-lock-one',
  `SELECT pg_advisory_xact_lock($1, hashtext($2)) FROM (SELECT set_config('lock_timeout', $3, true)) AS waits`,
);

/**
 * The recipients' locks in the order of their keys, each waited for at most $3, then lock_timeout
 * $4 (the session's, or a brief one) for the rest of the transaction. The short timeout is set in the WHERE
 * clause, which PostgreSQL evaluates for a row before the aggregate takes that row's lock, and the
 * ordered subquery feeds the aggregate in order.
 */
const LOCK_IN_ORDER = new PreparedStatement(
  'publish-lock-in-order',
  `SELECT set_config('lock_timeout', $4, true) FROM (
     SELECT count(pg_advisory_xact_lock($1, key)) FROM (
       SELECT DISTINCT hashtext(recipient) AS key FROM unnest($2::text[]) AS recipient ORDER BY key) AS keys
     WHERE set_config('lock_timeout', $3, true) IS NOT NULL) AS locked`,
);

/**
 * The positions (1-based) in $2 of the recipients whose lock another transaction holds; the
 * others' locks are taken. lock_timeout is $3 from then on (both are in the one row's select list,
 * so both are always evaluated).
 */
const TRY_LOCKS = new PreparedStatement<{ refused: string[] }>(
  'publish-try-locks',
  `SELECT set_config('lock_timeout', $3, true) AS lock_timeout,
     ARRAY(SELECT position FROM unnest($2::text[]) WITH ORDINALITY AS r (recipient, position) WHERE NOT pg_try_advisory_xact_lock($1, hashtext(recipient))) AS refused`,
);

/** A result row of the publish functions: one per proposed publish, in its position (migration 1795500000000). */
type PublishRow = { position: string; id: string | null; stored: boolean };

/**
 * The whole publish transaction in one round trip, when every recipient's lock is free: the
 * caller's implicit transaction takes the locks without waiting, stores, wakes and commits; no
 * rows when a lock is held elsewhere (nothing stored). The answer arrives after the commit.
 */
const PUBLISH_IF_FREE = new PreparedStatement<PublishRow>(
  'publish-if-free',
  'SELECT "position", id, stored FROM publish_if_free($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
);

/** The INSERT and its wake-ups, in a transaction that holds the recipients' locks. */
const PUBLISH_INSERT = new PreparedStatement<PublishRow>('publish-insert', 'SELECT "position", id, stored FROM publish_insert($1, $2, $3, $4, $5, $6, $7, $8)');

/**
 * The publish functions' parameters after the locks': one array per column, in the order of
 * `notifications`, then the wake-ups (wake-ups.ts), each a channel and its payload, sent if
 * anything is stored. (Exported for bench/load/notification-indexes.ts.)
 */
export function publishInsertParameters(notifications: NewNotification[], previousReleaseToo = false): unknown[] {
  const recipients = new Set(notifications.map((notification) => notification.recipient));
  const payloads = wakePayloads(recipients);
  const channels = payloads.map(() => WAKE_CHANNEL);
  if (previousReleaseToo) {
    payloads.push(...recipients);
    channels.push(...Array.from(recipients, () => PREVIOUS_RELEASE_CHANNEL));
  }
  return [
    notifications.map((notification) => notification.recipient),
    notifications.map((notification) => notification.correlationId),
    notifications.map((notification) => notification.status),
    notifications.map((notification) => notification.payload),
    notifications.map((notification) => notification.publishedBy),
    notifications.map((notification) => notification.retentionSeconds),
    channels,
    payloads,
  ];
}

const RECIPIENT_BUSY: InsertOutcome = { recipientBusy: true };
const ABANDONED: InsertOutcome = { abandoned: true };
const UNKNOWN_RECIPIENT: InsertOutcome = { unknownRecipient: true };

/**
 * The one writer of `notifications` (publish, retention) and `notification_expiries` (retention);
 * the delivery reads them through its own statements (DeliveryRepository) and writes only cursors.
 */
@Injectable()
export class NotificationsRepository {
  private readonly lockTimeoutMs: number;
  /** SHARED_LOCK_WAIT_MS; the test of the lock order raises it, so that a loaded machine's slow transactions are not taken for stuck ones. */
  sharedLockWaitMs = SHARED_LOCK_WAIT_MS;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    env: Env,
    private readonly previousRelease: PreviousReleaseListenersService,
  ) {
    this.lockTimeoutMs = env.DATABASE_LOCK_TIMEOUT_MS;
  }

  /**
   * Stores notifications in one transaction and wakes the instances once for it (NOTIFY is
   * delivered at commit). Each is stored once per (recipient, correlation id, status): a
   * repeated publish gets the stored id, unless the stored row has expired, in which case it is
   * stored anew (new id, new seq) and delivered again. Results are in the order of `batch`.
   *
   * When every recipient's lock is free, the whole transaction is one round trip (storeIfFree);
   * the rest of this describes the transaction that waits, taken when one is held elsewhere.
   *
   * Each recipient's publishes are serialised by a transaction-scoped advisory lock, so their
   * `seq` order is their commit order. Without it, two concurrent publishes could commit out of
   * seq order, and a reader that already sent the higher seq (its cursor) would skip the lower
   * one for good. A batch takes its recipients' locks in one order, the same everywhere, so
   * transactions of several instances queue behind each other instead of deadlocking; it waits
   * briefly. If a lock is not had by then, it is probably stuck: the batch starts again and only
   * tries the locks, and the publishes of a recipient whose lock is held are left out
   * (`recipientBusy`), so a stuck recipient never holds the others up. A batch of one recipient
   * waits for its lock (up to lock_timeout). Any other failure, a lock or statement timeout once
   * the locks are had included, fails the transaction: the caller decides what to try again.
   *
   * `briefly`: no lock is waited for longer than SHARED_LOCK_WAIT_MS, the rows' included (to find
   * out, after a timeout, which recipient was held up).
   */
  async insertBatch(batch: NewNotification[], { briefly = false } = {}): Promise<InsertOutcome[]> {
    const recipients = [...new Set(batch.map((notification) => notification.recipient))];
    const lockTimeout = `${briefly ? this.sharedLockWaitMs : this.lockTimeoutMs}ms`;
    const atOnce = await this.storeIfFree(batch, lockTimeout);
    if (atOnce) return atOnce;
    if (recipients.length === 1) return this.storeLocked(batch, (manager) => this.waitForLock(manager, recipients[0], lockTimeout));
    let locked = false;
    try {
      return await this.storeLocked(batch, async (manager) => {
        const busy = await this.waitForLocks(manager, recipients, lockTimeout);
        locked = true;
        return busy;
      });
    } catch (error) {
      // Only the lock step's wait means a stuck lock.
      if (locked || databaseUnavailableReason(error) !== 'lock') throw error;
      return this.storeLocked(batch, (manager) => this.tryLocks(manager, recipients, lockTimeout));
    }
  }

  /**
   * The whole transaction in one round trip, when no recipient's lock is held elsewhere (as it
   * almost never is: locks are held for the milliseconds of a commit); undefined, with nothing
   * stored, when one is.
   */
  private async storeIfFree(batch: NewNotification[], lockTimeout: string): Promise<InsertOutcome[] | undefined> {
    const outcomes = batch.map((notification): InsertOutcome | undefined => (notification.abandoned?.() ? ABANDONED : undefined));
    const positions = outcomes.flatMap((outcome, index) => (outcome === undefined ? [index] : []));
    if (positions.length === 0) return outcomes as InsertOutcome[];
    const bothForms = this.previousRelease.present;
    const parameters = publishInsertParameters(positions.map((index) => batch[index]), bothForms);
    const results = await PUBLISH_IF_FREE.run(this.dataSource, [PUBLISH_LOCK_CLASS, lockTimeout, ...parameters]);
    if (results.length === 0) return undefined;
    const stored = this.fill(outcomes, positions, batch, results);
    if (!bothForms && stored.size > 0) this.previousRelease.committedWithoutItsForm(stored);
    return outcomes as InsertOutcome[];
  }

  /** Takes one recipient's lock, waiting up to `lockTimeout`, the transaction's lock_timeout from then on. */
  private async waitForLock(manager: EntityManager, recipient: string, lockTimeout: string): Promise<Set<string>> {
    await LOCK_ONE.runIn(manager, [PUBLISH_LOCK_CLASS, recipient, lockTimeout]);
    return new Set();
  }

  /** Takes the recipients' locks in the order of their keys, waiting at most SHARED_LOCK_WAIT_MS for each (see LOCK_IN_ORDER); then `lockTimeout`. */
  private async waitForLocks(manager: EntityManager, recipients: string[], lockTimeout: string): Promise<Set<string>> {
    await LOCK_IN_ORDER.runIn(manager, [PUBLISH_LOCK_CLASS, recipients, `${this.sharedLockWaitMs}ms`, lockTimeout]);
    return new Set();
  }

  /** Takes the locks that are free; returns the recipients whose lock is held elsewhere. */
  private async tryLocks(manager: EntityManager, recipients: string[], lockTimeout: string): Promise<Set<string>> {
    const [{ refused }] = await TRY_LOCKS.runIn(manager, [PUBLISH_LOCK_CLASS, recipients, lockTimeout]);
    return new Set(refused.map((position) => recipients[Number(position) - 1]));
  }

  /**
   * One transaction: the locks `lock` takes, then the batch's publishes except those of the
   * recipients it reports busy and those nobody waits for any more (checked once the locks are
   * had, the last moment before the INSERT). The wake-ups are sent while a listener of the
   * previous release may be there in its form too; when they went without it,
   * PreviousReleaseListenersService is told once the transaction commits.
   */
  private async storeLocked(batch: NewNotification[], lock: (manager: EntityManager) => Promise<Set<string>>): Promise<InsertOutcome[]> {
    let wokenAlone: Set<string> | undefined;
    const stored = await this.dataSource.transaction(async (manager) => {
      const busy = await lock(manager);
      const outcomes = batch.map((notification): InsertOutcome | undefined =>
        busy.has(notification.recipient) ? RECIPIENT_BUSY : notification.abandoned?.() ? ABANDONED : undefined,
      );
      const positions = outcomes.flatMap((outcome, index) => (outcome === undefined ? [index] : []));
      if (positions.length === 0) return outcomes as InsertOutcome[];
      const bothForms = this.previousRelease.present;
      const results = await PUBLISH_INSERT.runIn(manager, publishInsertParameters(positions.map((index) => batch[index]), bothForms));
      const woken = this.fill(outcomes, positions, batch, results);
      if (!bothForms && woken.size > 0) wokenAlone = woken;
      return outcomes as InsertOutcome[];
    });
    if (wokenAlone) this.previousRelease.committedWithoutItsForm(wokenAlone);
    return stored;
  }

  /** Puts each result row's outcome in its publish's place; returns the recipients something was stored for. */
  private fill(outcomes: (InsertOutcome | undefined)[], positions: number[], batch: NewNotification[], results: PublishRow[]): Set<string> {
    const woken = new Set<string>();
    for (const { position, id, stored } of results) {
      const index = positions[Number(position) - 1];
      outcomes[index] = id === null ? UNKNOWN_RECIPIENT : { id, stored };
      if (stored) woken.add(batch[index].recipient);
    }
    return woken;
  }

  /**
   * Deletes up to `limit` expired notifications; rows a publish is re-storing right now are
   * skipped rather than waited for. Each recipient's highest deleted seq is kept, so a client
   * resuming below it learns its history is incomplete. Returns how many were deleted.
   */
  async purgeExpired(limit: number): Promise<number> {
    const [{ deleted }]: { deleted: number }[] = await this.dataSource.query(
      `WITH purged AS (
         DELETE FROM notifications WHERE seq IN (
           SELECT seq FROM notifications WHERE expires_at <= now() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING recipient, seq),
       marked AS (
         INSERT INTO notification_expiries (client_id, expired_through_seq)
         SELECT recipient, max(seq) FROM purged GROUP BY recipient ORDER BY recipient
         ON CONFLICT (client_id) DO UPDATE SET expired_through_seq = GREATEST(notification_expiries.expired_through_seq, EXCLUDED.expired_through_seq))
       SELECT count(*)::int AS deleted FROM purged`,
      [limit],
    );
    return deleted;
  }

  /**
   * The recipient's retained notifications published at or after `since` and with a seq after
   * `after` (each when given), oldest first.
   */
  async listed(recipient: string, { since, after }: { since?: Date; after?: string }, limit: number): Promise<{ seq: number; payload: string }[]> {
    const rows: { seq: string; payload: string }[] = await this.dataSource.query(
      `SELECT seq, payload FROM notifications
       WHERE recipient = $1 AND seq > $2::bigint AND ($3::timestamptz IS NULL OR created_at >= $3) AND expires_at > now()
       ORDER BY seq LIMIT $4`,
      [recipient, after ?? '0', since ?? null, limit],
    );
    return rows.map((row) => ({ seq: Number(row.seq), payload: row.payload }));
  }
}
