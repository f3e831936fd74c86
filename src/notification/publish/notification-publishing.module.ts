import { Module } from '@nestjs/common';
import { NotificationPublisherService } from './notification-publisher.service.js';
import { NotificationsRepository } from './notifications.repository.js';
import { PreviousReleaseListenersService } from './previous-release-listeners.service.js';

/** Storing notifications, without the stream: what the CLI needs, and what the stream reads. */
@Module({
  providers: [NotificationPublisherService, NotificationsRepository, PreviousReleaseListenersService],
  exports: [NotificationPublisherService, NotificationsRepository],
})
export class NotificationPublishingModule {}
