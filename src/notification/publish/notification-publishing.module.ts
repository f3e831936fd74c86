import { Module } from '@nestjs/common';
import { NotificationPublisher } from './notification-publisher.service.js';
import { NotificationsRepository } from './notifications.repository.js';
import { PreviousReleaseListeners } from './previous-release-listeners.js';

/** Storing notifications, without the stream: what the CLI needs, and what the stream reads. */
@Module({
  providers: [NotificationPublisher, NotificationsRepository, PreviousReleaseListeners],
  exports: [NotificationPublisher, NotificationsRepository],
})
export class NotificationPublishingModule {}
