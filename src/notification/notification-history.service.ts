import { Injectable } from '@nestjs/common';
import { NotificationsRepository } from './notifications.repository.js';

/** At most this many notifications per history request; a client pages on with a later `since`. */
const HISTORY_LIMIT = 1000;

@Injectable()
export class NotificationHistory {
  constructor(private readonly notifications: NotificationsRepository) {}

  /** Exactly the pushed messages, oldest first. */
  async since(clientId: string, since: Date): Promise<unknown[]> {
    const payloads = await this.notifications.publishedSince(clientId, since, HISTORY_LIMIT);
    return payloads.map((payload) => JSON.parse(payload));
  }
}
