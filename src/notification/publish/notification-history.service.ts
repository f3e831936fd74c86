import { Injectable } from '@nestjs/common';
import { NotificationsRepository } from './notifications.repository.js';

/** At most this many notifications per history request; a client pages on with `after` the last seq. */
const HISTORY_LIMIT = 1000;

/** Which notifications a history request asks for: published at or after `since`, with a seq after `after` (a bigint, as text); both when both are given. */
export interface HistoryQuery {
  since?: Date;
  after?: string;
}

@Injectable()
export class NotificationHistoryService {
  constructor(private readonly notifications: NotificationsRepository) {}

  /** Exactly the pushed messages, each with its seq after the pushed fields, oldest first. */
  async list(clientId: string, query: HistoryQuery): Promise<Record<string, unknown>[]> {
    const rows = await this.notifications.listed(clientId, query, HISTORY_LIMIT);
    return rows.map(({ seq, payload }) => ({ ...(JSON.parse(payload) as Record<string, unknown>), seq }));
  }
}
