import { Module } from '@nestjs/common';
import { ClientsModule } from '../clients/clients.module.js';
import { KeysModule } from '../keys/keys.module.js';
import { TokenModule } from '../token/token.module.js';
import { BearerAuthenticatorService } from './bearer-authenticator.service.js';
import { BearerGuard } from './bearer.guard.js';

/**
 * The service as a resource server: the routes that take a client's access token (publish,
 * streams, userinfo, registration, the admin API) check it here, by one rule (RFC 6750, RFC 9068).
 */
@Module({
  imports: [ClientsModule, KeysModule, TokenModule],
  providers: [BearerAuthenticatorService, BearerGuard],
  exports: [BearerAuthenticatorService, BearerGuard],
})
export class BearerModule {}
