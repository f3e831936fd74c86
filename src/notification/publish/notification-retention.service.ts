import { Injectable, type OnModuleInit } from '@nestjs/common';
import { HousekeepingService } from '../../database/housekeeping.service.js';
import { NotificationsRepository } from './notifications.repository.js';

/** NOTIFICATION_RETENTION is enforced: expired notifications are deleted with the other expired rows, in batches. */
@Injectable()
export class NotificationRetentionService implements OnModuleInit {
  constructor(
    private readonly housekeeping: HousekeepingService,
    private readonly notifications: NotificationsRepository,
  ) {}

  onModuleInit() {
    this.housekeeping.register((limit) => this.notifications.purgeExpired(limit));
  }
}
