import { Module } from '@nestjs/common';
import { ClientsModule } from '../clients/clients.module.js';
import { IdentityProvidersModule } from '../identity-providers/identity-providers.module.js';
import { KeysModule } from '../keys/keys.module.js';
import { BearerModule } from '../bearer/bearer.module.js';
import { SessionsModule } from '../sessions/sessions.module.js';
import { TokenModule } from '../token/token.module.js';
import { UsersModule } from '../users/users.module.js';
import { DiscoveryController } from './discovery.controller.js';
import { LogoutController } from './logout.controller.js';
import { LogoutService } from './logout.service.js';
import { ProviderLogoutReturnsService } from './provider-logout-returns.service.js';
import { UserinfoController } from './userinfo.controller.js';
import { UserinfoService } from './userinfo.service.js';

/** OpenID Connect's own routes: the discovery document, userinfo and logout. The bearer checks are the notification routes' own. */
@Module({
  imports: [BearerModule, ClientsModule, IdentityProvidersModule, KeysModule, SessionsModule, TokenModule, UsersModule],
  controllers: [DiscoveryController, LogoutController, UserinfoController],
  providers: [LogoutService, ProviderLogoutReturnsService, UserinfoService],
})
export class OidcModule {}
