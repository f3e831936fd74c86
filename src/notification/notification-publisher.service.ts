import { Injectable } from '@nestjs/common';
import { Batcher } from '../common/batching/batcher.js';
import { invalidInput } from '../common/errors/app-error.js';
import { Env } from '../config/env.js';
import { databaseUnavailableReason, isDatabaseUnavailable } from '../database/database-unavailable.js';
import { Metrics } from '../metrics/metrics.service.js';
import { type PublishNotificationDto, toPushedMessage } from './dto/publish-notification.dto.js';
import { type InsertOutcome, type NewNotification, NotificationsRepository } from './notifications.repository.js';

export const UNKNOWN_RECIPIENT = 'recipient must be the client_id of a registered client';

/** At most this many publishes share one transaction. */
const MAX_BATCH = 500;
/** Transactions under way at once: a recipient whose lock is held elsewhere stalls one of them, not all. */
const CONCURRENT_BATCHES = 4;
/** How long a recipient whose publish timed out keeps to transactions of its own. */
const SLOW_RECIPIENT_MS = 10_000;
/** Bound on that list (a table-wide lock times every recipient out at once). */
const MAX_SLOW_RECIPIENTS = 10_000;

/** A publish's own result: stored (or found), or the error that failed it alone. */
type PublishOutcome = InsertOutcome | { error: unknown };

/**
 * Stores a notification durably; the 202 `{id}` is only answered after the commit. Concurrent
 * publishes share transactions (PostgreSQL commits transactions that NOTIFY one at a time, so a
 * transaction each would cap the publish rate at one commit flush per notification). Sharing
 * never makes one publish fail another: a transaction that fails is retried in parts until only
 * the publishes at fault fail.
 */
@Injectable()
export class NotificationPublisher {
  private readonly writes: Batcher<NewNotification, PublishOutcome>;
  /** Recipients whose last publish hit a lock or statement timeout, until when they go alone. */
  private readonly slowRecipients = new Map<string, number>();

  constructor(
    private readonly notifications: NotificationsRepository,
    private readonly env: Env,
    private readonly metrics: Metrics,
  ) {
    this.writes = new Batcher((batch) => this.store(batch), {
      maxBatch: MAX_BATCH,
      concurrency: CONCURRENT_BATCHES,
      keyOf: (notification) => notification.recipient,
      alone: (recipient) => this.isSlow(recipient),
    });
  }

  async publish(dto: PublishNotificationDto, publishedBy: string | null): Promise<{ id: string }> {
    const outcome = await this.writes.submit({
      recipient: dto.recipient,
      correlationId: dto.correlationId,
      status: dto.status,
      payload: toPushedMessage(dto),
      publishedBy,
      expiresAt: new Date(Date.now() + this.env.NOTIFICATION_RETENTION * 1000),
    });
    if ('error' in outcome) throw outcome.error;
    if ('unknownRecipient' in outcome) throw invalidInput(UNKNOWN_RECIPIENT);
    if (outcome.stored) this.metrics.notificationsPublished.inc();
    return { id: outcome.id };
  }

  /**
   * One transaction for the batch. If it fails, the parts are tried on their own: after a data
   * error each publish alone (in order), after a timeout or a lost connection each recipient's
   * publishes apart (a lock on one recipient must not fail the others).
   */
  private async store(batch: NewNotification[]): Promise<PublishOutcome[]> {
    try {
      return await this.notifications.insertBatch(batch);
    } catch (error) {
      const unavailable = isDatabaseUnavailable(error);
      const parts = unavailable ? byRecipient(batch) : batch.map((_, index) => [index]);
      if (parts.length === 1) {
        if (unavailable && batch.length > 0) this.markSlow(batch[0].recipient, error);
        return batch.map(() => ({ error }));
      }
      const outcomes: PublishOutcome[] = new Array(batch.length);
      const storePart = async (indexes: number[]) => {
        const results = await this.store(indexes.map((index) => batch[index]));
        indexes.forEach((index, position) => (outcomes[index] = results[position]));
      };
      if (unavailable) await Promise.all(parts.map(storePart));
      else for (const part of parts) await storePart(part);
      return outcomes;
    }
  }

  private markSlow(recipient: string, error: unknown): void {
    // Only a wait that ran out (a lock or a statement timeout) says something about this recipient.
    const reason = databaseUnavailableReason(error);
    if (reason !== 'lock' && reason !== 'timeout') return;
    if (this.slowRecipients.size >= MAX_SLOW_RECIPIENTS) for (const key of this.slowRecipients.keys()) this.isSlow(key);
    if (this.slowRecipients.size < MAX_SLOW_RECIPIENTS) this.slowRecipients.set(recipient, Date.now() + SLOW_RECIPIENT_MS);
  }

  private isSlow(recipient: string): boolean {
    const until = this.slowRecipients.get(recipient);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.slowRecipients.delete(recipient);
    return false;
  }
}

/** The batch's indexes grouped by recipient, each group in batch order. */
function byRecipient(batch: NewNotification[]): number[][] {
  const groups = new Map<string, number[]>();
  batch.forEach((notification, index) => {
    const group = groups.get(notification.recipient);
    if (group) group.push(index);
    else groups.set(notification.recipient, [index]);
  });
  return [...groups.values()];
}
