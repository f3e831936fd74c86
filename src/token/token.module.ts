import { Module } from '@nestjs/common';
import { ClientsModule } from '../clients/clients.module.js';
import { HousekeepingModule } from '../database/housekeeping.module.js';
import { IdentityProvidersModule } from '../identity-providers/identity-providers.module.js';
import { KeysModule } from '../keys/keys.module.js';
import { AccessTokens } from './access-tokens.service.js';
import { AuthorizationCodeIssuer } from './authorization-code-issuer.js';
import { AuthorizationCodesRepository } from './authorization-codes.repository.js';
import { ClientAuthentication } from './client-authentication.js';
import { DeviceCodeRetention } from './device-code-retention.js';
import { DeviceCodesRepository } from './device-codes.repository.js';
import { AuthorizationCodeGrant } from './grants/authorization-code.grant.js';
import { ClientCredentialsGrant } from './grants/client-credentials.grant.js';
import { DeviceCodeGrant } from './grants/device-code.grant.js';
import { RefreshTokenGrant } from './grants/refresh-token.grant.js';
import { GrantsRepository } from './grants.repository.js';
import { IdTokenHints } from './id-token-hints.js';
import { IdTokens } from './id-tokens.js';
import { IdentityTokenController } from './identity-token.controller.js';
import { MetadataController } from './metadata.controller.js';
import { RefreshTokensRepository } from './refresh-tokens.repository.js';
import { TokenInspectionController } from './token-inspection.controller.js';
import { TokenInspectionService } from './token-inspection.service.js';
import { TokenController } from './token.controller.js';
import { TokenRetention } from './token-retention.js';
import { TokenService } from './token.service.js';
import { UserTokenIssuer } from './user-token-issuer.js';

@Module({
  imports: [ClientsModule, HousekeepingModule, IdentityProvidersModule, KeysModule],
  controllers: [TokenController, TokenInspectionController, MetadataController, IdentityTokenController],
  providers: [
    AccessTokens,
    AuthorizationCodeIssuer,
    AuthorizationCodesRepository,
    AuthorizationCodeGrant,
    ClientAuthentication,
    ClientCredentialsGrant,
    DeviceCodeGrant,
    DeviceCodeRetention,
    DeviceCodesRepository,
    GrantsRepository,
    IdTokenHints,
    IdTokens,
    RefreshTokenGrant,
    RefreshTokensRepository,
    TokenInspectionService,
    TokenRetention,
    TokenService,
    UserTokenIssuer,
  ],
  // HousekeepingModule: for NotificationModule's retention, until it imports the module itself.
  exports: [AccessTokens, AuthorizationCodeIssuer, ClientAuthentication, DeviceCodesRepository, HousekeepingModule, IdTokenHints],
})
export class TokenModule {}
