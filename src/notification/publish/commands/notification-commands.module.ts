import { Module } from '@nestjs/common';
import { NotificationPublishingModule } from '../notification-publishing.module.js';
import { NotificationPublishCommand } from './notification-publish.command.js';

@Module({
  imports: [NotificationPublishingModule],
  providers: [NotificationPublishCommand],
})
export class NotificationCommandsModule {}
