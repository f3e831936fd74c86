import { Module } from '@nestjs/common';
import { NotificationModule } from '../notification/notification.module.js';
import { UsersModule } from '../users/users.module.js';
import { DiscoveryController } from './discovery.controller.js';
import { UserinfoController } from './userinfo.controller.js';
import { UserinfoService } from './userinfo.service.js';

/** OpenID Connect's own routes: the discovery document and userinfo. The bearer checks are the notification routes' own. */
@Module({
  imports: [NotificationModule, UsersModule],
  controllers: [DiscoveryController, UserinfoController],
  providers: [UserinfoService],
})
export class OidcModule {}
