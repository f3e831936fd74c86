import { Module } from '@nestjs/common';
import { ClientsModule } from '../clients/clients.module.js';
import { DeviceFlowModule } from '../device-flow/device-flow.module.js';
import { OAuthHelperModule } from '../oauth-helper/oauth-helper.module.js';
import { UsersModule } from '../users/users.module.js';
import { IdentityProvidersModule } from '../identity-providers/identity-providers.module.js';
import { UpstreamCallbackController } from './upstream-callback.controller.js';
import { UpstreamCallbackService } from './upstream-callback.service.js';

/** GET /sso/callback/NAME: where a sign-in at a provider comes back and goes on to the flow that started it. */
@Module({
  imports: [ClientsModule, IdentityProvidersModule, OAuthHelperModule, DeviceFlowModule, UsersModule],
  controllers: [UpstreamCallbackController],
  providers: [UpstreamCallbackService],
})
export class UpstreamCallbackModule {}
