import { Injectable } from '@nestjs/common';
import { Batcher } from '../common/batching/batcher.js';
import { invalidInput } from '../common/errors/app-error.js';
import { Env } from '../config/env.js';
import { Metrics } from '../metrics/metrics.service.js';
import { type PublishNotificationDto, toPushedMessage } from './dto/publish-notification.dto.js';
import { type InsertOutcome, type NewNotification, NotificationsRepository } from './notifications.repository.js';

export const UNKNOWN_RECIPIENT = 'recipient must be the client_id of a registered client';

/** At most this many publishes share one transaction. */
const MAX_BATCH = 500;

/**
 * Stores a notification durably; the 202 `{id}` is only answered after the commit. Concurrent
 * publishes share transactions (PostgreSQL commits transactions that NOTIFY one at a time, so a
 * transaction each would cap the publish rate at one commit flush per notification).
 */
@Injectable()
export class NotificationPublisher {
  private readonly writes: Batcher<NewNotification, InsertOutcome>;

  constructor(
    notifications: NotificationsRepository,
    private readonly env: Env,
    private readonly metrics: Metrics,
  ) {
    this.writes = new Batcher((batch) => notifications.insertBatch(batch), MAX_BATCH);
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
    if ('unknownRecipient' in outcome) throw invalidInput(UNKNOWN_RECIPIENT);
    if (outcome.stored) this.metrics.notificationsPublished.inc();
    return { id: outcome.id };
  }
}
