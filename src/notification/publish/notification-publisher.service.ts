import { Injectable } from '@nestjs/common';
import { Batcher } from '../../common/batching/batcher.js';
import { invalidInput } from '../../common/errors/app-error.js';
import { RequestDeadlineError } from '../../common/errors/temporarily-unavailable.js';
import { Env } from '../../config/env.js';
import { databaseUnavailableReason } from '../../common/errors/database-unavailable.js';
import { MetricsService } from '../../metrics/metrics.service.js';
import { type PublishNotificationDto, toPushedMessage } from './dto/publish-notification.dto.js';
import { type InsertOutcome, type NewNotification, NotificationsRepository } from './notifications.repository.js';

export const UNKNOWN_RECIPIENT = 'recipient must be the client_id of a registered client';

/** At most this many publishes share one transaction. */
const MAX_BATCH = 500;
/** Transactions under way at once: one that waits (a lock, a slow statement) holds up only its own publishes. */
const CONCURRENT_BATCHES = 4;
/**
 * A shared transaction waits a moment for a recipient's lock (other instances hold it for
 * milliseconds); one still held then is reported busy, and its publishes go into the next shared
 * transaction. Found busy for this long, the lock looks stuck, and the recipient goes alone
 * (waiting for its lock) so it no longer holds up everybody's transactions.
 */
const BUSY_BEFORE_ALONE_MS = 200;
/** How long a recipient found stuck keeps to transactions of its own. */
const SLOW_RECIPIENT_MS = 10_000;
/** Transactions at once that retry a timed-out batch recipient by recipient (each holds a pooled connection). */
const RETRY_LANES = 2;
/** Bound on each of those lists. */
const MAX_SLOW_RECIPIENTS = 10_000;

/** What a publish answers: the stored id, and whether it was stored before. */
export type Published = { id: string; duplicate?: true };
/** One element of a batch: its body, or the field errors that refused it. */
export type PublishBody = { body: PublishNotificationDto } | { errors: string[] };
/** A batch element's answer: stored (or stored before), or refused with its field errors. */
export type BatchResult = Published | { status: 400; errors: string[] };

/** A publish's own result: stored (or found), or the error that failed it alone. */
type PublishOutcome = InsertOutcome | { error: unknown };
/** True once nobody waits for a publish's answer (its request was answered by the deadline, or its client left). */
export type Abandoned = () => boolean;

const ABANDONED: PublishOutcome = { abandoned: true };

/**
 * Stores a notification durably; the 202 `{id}` is only answered after the commit. Concurrent
 * publishes share transactions (PostgreSQL commits transactions that NOTIFY one at a time, so a
 * transaction each would cap the publish rate at one commit flush per notification). Sharing
 * never makes one publish fail, nor wait long for another: a recipient whose lock stays held
 * elsewhere is left out and published on its own, a transaction that times out is retried one
 * recipient at a time, and one PostgreSQL refuses one publish at a time.
 *
 * At most PUBLISH_QUEUE_MAX publishes wait for a transaction; a publish that finds the queue full
 * is refused at once (QueueFullError, a 503), rather than waiting past its deadline. A publish
 * whose request was answered meanwhile is never stored: dropped from the queue, or left out of
 * its transaction once the locks are had.
 */
@Injectable()
export class NotificationPublisherService {
  private readonly writes: Batcher<NewNotification, PublishOutcome>;
  /** Recipients whose lock was found held elsewhere, since when (until a transaction stores them). */
  private readonly busySince = new Map<string, number>();
  /** Recipients whose lock looked stuck, until when they go alone. */
  private readonly slowRecipients = new Map<string, number>();

  constructor(
    private readonly notifications: NotificationsRepository,
    private readonly env: Env,
    private readonly metrics: MetricsService,
  ) {
    this.writes = new Batcher((batch) => this.store(batch), {
      maxBatch: MAX_BATCH,
      concurrency: CONCURRENT_BATCHES,
      // A transaction takes about a millisecond: what arrives meanwhile shares the next commit
      // instead of paying a commit, a NOTIFY and the delivery reads it wakes each.
      overlapAfterMs: env.PUBLISH_GROUP_COMMIT_MS,
      keyOf: (notification) => notification.recipient,
      alone: (recipient) => this.isSlow(recipient),
      retry: (outcome) => 'recipientBusy' in outcome,
      maxWaiting: env.PUBLISH_QUEUE_MAX,
      drop: (notification) => (notification.abandoned?.() ? ABANDONED : undefined),
    });
  }

  /** Stores the notification once per (recipient, correlationId, status); a repeat gets the stored id and `duplicate: true`. */
  async publish(dto: PublishNotificationDto, publishedBy: string | null, abandoned?: Abandoned): Promise<Published> {
    const outcome = await this.answer(this.writes.submit(this.newNotification(dto, publishedBy, abandoned)));
    if ('unknownRecipient' in outcome) throw invalidInput(UNKNOWN_RECIPIENT);
    return outcome;
  }

  /**
   * Publishes a batch's valid elements as `publish` would, in the batch's order (per recipient,
   * that is the order they are pushed in), and answers each element in its place: its id, or the
   * field errors that kept it out. Only a database fault fails the whole batch, after every
   * element has finished: a retry of the batch is safe, what was stored answers as a duplicate.
   */
  async publishBatch(elements: PublishBody[], publishedBy: string | null, abandoned?: Abandoned): Promise<BatchResult[]> {
    // Queued together and in order: they share transactions, and each recipient keeps the array's order.
    const valid = elements.flatMap((element) => ('errors' in element ? [] : [this.newNotification(element.body, publishedBy, abandoned)]));
    const stored = this.writes.submitAll(valid).map((outcome) => this.answer(outcome));
    let next = 0;
    const settled = await Promise.allSettled(elements.map((element) => ('errors' in element ? null : stored[next++])));
    const failure = settled.find((result) => result.status === 'rejected');
    if (failure) throw failure.reason;
    return settled.map((result, index): BatchResult => {
      const element = elements[index];
      if ('errors' in element) return { status: 400, errors: element.errors };
      const outcome = (result as PromiseFulfilledResult<Published | { unknownRecipient: true } | null>).value!;
      return 'unknownRecipient' in outcome ? { status: 400, errors: [UNKNOWN_RECIPIENT] } : outcome;
    });
  }

  private newNotification(dto: PublishNotificationDto, publishedBy: string | null, abandoned: Abandoned | undefined): NewNotification {
    return {
      recipient: dto.recipient,
      correlationId: dto.correlationId,
      status: dto.status,
      payload: toPushedMessage(dto),
      publishedBy,
      retentionSeconds: this.env.NOTIFICATION_RETENTION,
      abandoned,
    };
  }

  private async answer(pending: Promise<PublishOutcome>): Promise<Published | { unknownRecipient: true }> {
    const outcome = await pending;
    if ('error' in outcome) throw outcome.error;
    if ('unknownRecipient' in outcome) return outcome;
    // Nobody reads this answer: the request was answered already (or its client left).
    if ('abandoned' in outcome) throw new RequestDeadlineError(this.env.REQUEST_TIMEOUT_MS);
    // The batcher tries a busy recipient again until it is stored or goes alone, where it waits for its lock.
    if ('recipientBusy' in outcome) throw new Error('a publish came back with its recipient busy');
    if (!outcome.stored) return { id: outcome.id, duplicate: true };
    this.metrics.notificationsPublished.inc();
    return { id: outcome.id };
  }

  /**
   * One transaction for the batch. If it fails, what is tried again depends on why, so only the
   * publishes at fault fail:
   * - a lock or statement timeout: each recipient's publishes apart (see storeEachRecipient);
   * - a refusal of the data: each publish alone, in order;
   * - a lost connection, or a database that refuses connections: nothing; the database is what is
   *   wrong, and every caller gets its 503.
   */
  private async store(batch: NewNotification[]): Promise<PublishOutcome[]> {
    try {
      const outcomes = await this.notifications.insertBatch(batch);
      outcomes.forEach((outcome, index) => this.noteLock(batch[index].recipient, 'recipientBusy' in outcome));
      return outcomes;
    } catch (error) {
      const reason = databaseUnavailableReason(error);
      if (reason === 'lock' || reason === 'timeout') return this.storeEachRecipient(batch, error);
      if (batch.length === 1 || reason !== undefined) return batch.map(() => ({ error }));
      const outcomes: PublishOutcome[] = [];
      for (const notification of batch) outcomes.push(...(await this.store([notification])));
      return outcomes;
    }
  }

  /**
   * After a timeout: each recipient's publishes in a transaction of their own, RETRY_LANES at a
   * time, waiting briefly for any lock. A recipient held up again while others go through is the
   * slow one: it fails, and goes alone for a while (SLOW_RECIPIENT_MS). While none goes through,
   * the database may be what is slow (a locked table): once the first RETRY_LANES retries were
   * all held up, the others are not tried, nobody is marked slow, and all fail; the retries also
   * stop after one DATABASE_LOCK_TIMEOUT_MS in any case.
   */
  private async storeEachRecipient(batch: NewNotification[], error: unknown): Promise<PublishOutcome[]> {
    const positions = new Map<string, number[]>();
    batch.forEach(({ recipient }, index) => {
      const indexes = positions.get(recipient);
      if (indexes) indexes.push(index);
      else positions.set(recipient, [index]);
    });
    const outcomes: PublishOutcome[] = batch.map(() => ({ error }));
    // Alone in its transaction, a recipient cannot be told from a slow database.
    if (positions.size === 1) return outcomes;
    const groups = [...positions.values()];
    const until = Date.now() + this.env.DATABASE_LOCK_TIMEOUT_MS;
    const heldUp: string[] = [];
    let tried = 0;
    let wentThrough = 0;
    const next = () => (Date.now() < until && (wentThrough > 0 || tried < RETRY_LANES) ? (tried++, groups.shift()) : undefined);
    const lane = async () => {
      for (let indexes = next(); indexes !== undefined; indexes = next()) {
        const { outcomes: stored, heldUp: slow } = await this.storeRecipient(indexes.map((index) => batch[index]));
        indexes.forEach((index, position) => (outcomes[index] = stored[position]));
        if (slow) heldUp.push(batch[indexes[0]].recipient);
        else wentThrough++;
      }
    };
    await Promise.all(Array.from({ length: RETRY_LANES }, lane));
    if (wentThrough > 0) for (const recipient of heldUp) this.markSlow(recipient);
    return outcomes;
  }

  /** One recipient's publishes, in order, in a transaction that waits briefly for any lock; held up (a lock or statement timeout), they fail. */
  private async storeRecipient(publishes: NewNotification[]): Promise<{ outcomes: PublishOutcome[]; heldUp: boolean }> {
    try {
      return { outcomes: await this.notifications.insertBatch(publishes, { briefly: true }), heldUp: false };
    } catch (error) {
      const reason = databaseUnavailableReason(error);
      const heldUp = reason === 'lock' || reason === 'timeout';
      if (publishes.length === 1 || reason !== undefined) return { outcomes: publishes.map(() => ({ error })), heldUp };
      const outcomes: PublishOutcome[] = [];
      for (const notification of publishes) outcomes.push(...(await this.store([notification])));
      return { outcomes, heldUp };
    }
  }

  /** Remembers since when a recipient's lock has been found held elsewhere; a transaction that stored it forgets it. */
  private noteLock(recipient: string, busy: boolean): void {
    if (!busy) {
      this.busySince.delete(recipient);
      return;
    }
    if (this.busySince.has(recipient)) return;
    if (this.busySince.size >= MAX_SLOW_RECIPIENTS) this.busySince.delete(this.busySince.keys().next().value!);
    this.busySince.set(recipient, Date.now());
  }

  private markSlow(recipient: string): void {
    // Full: the oldest entry goes (a Map iterates in insertion order).
    if (this.slowRecipients.size >= MAX_SLOW_RECIPIENTS) this.slowRecipients.delete(this.slowRecipients.keys().next().value!);
    this.slowRecipients.delete(recipient);
    this.slowRecipients.set(recipient, Date.now() + SLOW_RECIPIENT_MS);
  }

  private isSlow(recipient: string): boolean {
    const busySince = this.busySince.get(recipient);
    if (busySince !== undefined && Date.now() - busySince >= BUSY_BEFORE_ALONE_MS) {
      this.busySince.delete(recipient);
      this.markSlow(recipient);
    }
    const until = this.slowRecipients.get(recipient);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.slowRecipients.delete(recipient);
    return false;
  }
}
