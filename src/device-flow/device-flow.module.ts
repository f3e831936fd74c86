import { Module } from '@nestjs/common';
import { ClientsModule } from '../clients/clients.module.js';
import { CodesModule } from '../codes/codes.module.js';
import { IdentityProvidersModule } from '../identity-providers/identity-providers.module.js';
import { OAuthHelperModule } from '../oauth-helper/oauth-helper.module.js';
import { SessionsModule } from '../sessions/sessions.module.js';
import { TokenModule } from '../token/token.module.js';
import { UsersModule } from '../users/users.module.js';
import { DeviceAuthorizationController } from './device-authorization.controller.js';
import { DeviceAuthorizationService } from './device-authorization.service.js';
import { DeviceVerificationController } from './device-verification.controller.js';
import { DeviceVerificationService } from './device-verification.service.js';
import { UserCodeThrottleService } from './user-code-throttle.service.js';

/**
 * The standard device authorization grant (RFC 8628), beside the helper flow: the device
 * authorization endpoint and the verification page. Its tokens come from /sso/token, whose
 * device grant lives with the other grants.
 */
@Module({
  imports: [ClientsModule, CodesModule, IdentityProvidersModule, OAuthHelperModule, SessionsModule, TokenModule, UsersModule],
  controllers: [DeviceAuthorizationController, DeviceVerificationController],
  providers: [DeviceAuthorizationService, DeviceVerificationService, UserCodeThrottleService],
  exports: [DeviceVerificationService],
})
export class DeviceFlowModule {}
