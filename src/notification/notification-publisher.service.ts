import { Injectable } from '@nestjs/common';
import { invalidInput } from '../common/errors/app-error.js';
import { Env } from '../config/env.js';
import { Metrics } from '../metrics/metrics.service.js';
import { type PublishNotificationDto, toPushedMessage } from './dto/publish-notification.dto.js';
import { NotificationsRepository } from './notifications.repository.js';

export const UNKNOWN_RECIPIENT = 'recipient must be the client_id of a registered client';

/** Stores a notification durably; the 202 `{id}` is only answered after the commit. */
@Injectable()
export class NotificationPublisher {
  constructor(
    private readonly notifications: NotificationsRepository,
    private readonly env: Env,
    private readonly metrics: Metrics,
  ) {}

  async publish(dto: PublishNotificationDto, publishedBy: string | null): Promise<{ id: string }> {
    try {
      const { id, stored } = await this.notifications.insert({
        recipient: dto.recipient,
        correlationId: dto.correlationId,
        status: dto.status,
        payload: toPushedMessage(dto),
        publishedBy,
        expiresAt: new Date(Date.now() + this.env.NOTIFICATION_RETENTION * 1000),
      });
      if (stored) this.metrics.notificationsPublished.inc();
      return { id };
    } catch (error) {
      // foreign_key_violation: the recipient is not a registered client.
      if ((error as { code?: string }).code === '23503') throw invalidInput(UNKNOWN_RECIPIENT);
      throw error;
    }
  }
}
