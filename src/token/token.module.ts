import { Module } from '@nestjs/common';
import { ClientsModule } from '../clients/clients.module.js';
import { CodesModule } from '../codes/codes.module.js';
import { GrantRetentionService } from '../grants/grant-retention.service.js';
import { GrantsModule } from '../grants/grants.module.js';
import { RevokedGrantsModule } from '../grants/revoked-grants.module.js';
import { HousekeepingModule } from '../database/housekeeping.module.js';
import { IdentityProvidersModule } from '../identity-providers/identity-providers.module.js';
import { KeysModule } from '../keys/keys.module.js';
import { AccessTokensService } from './access-tokens.service.js';
import { ClientAuthenticationService } from './client-authentication.service.js';
import { AuthorizationCodeGrant } from './grants/authorization-code.grant.js';
import { ClientCredentialsGrant } from './grants/client-credentials.grant.js';
import { DeviceCodeGrant } from './grants/device-code.grant.js';
import { RefreshTokenGrant } from './grants/refresh-token.grant.js';
import { IdTokenHintsService } from './id-token-hints.service.js';
import { IdTokensService } from './id-tokens.service.js';
import { IdentityTokenController } from './identity-token.controller.js';
import { MetadataController } from './metadata.controller.js';
import { TokenInspectionController } from './token-inspection.controller.js';
import { TokenInspectionService } from './token-inspection.service.js';
import { TokenController } from './token.controller.js';
import { TokenRetentionService } from './token-retention.service.js';
import { TokenService } from './token.service.js';
import { UserTokenIssuerService } from './user-token-issuer.service.js';

@Module({
  imports: [ClientsModule, CodesModule, GrantsModule, HousekeepingModule, IdentityProvidersModule, KeysModule, RevokedGrantsModule],
  controllers: [TokenController, TokenInspectionController, MetadataController, IdentityTokenController],
  providers: [
    AccessTokensService,
    AuthorizationCodeGrant,
    ClientAuthenticationService,
    ClientCredentialsGrant,
    DeviceCodeGrant,
    GrantRetentionService,
    IdTokenHintsService,
    IdTokensService,
    RefreshTokenGrant,
    TokenInspectionService,
    TokenRetentionService,
    TokenService,
    UserTokenIssuerService,
  ],
  exports: [AccessTokensService, ClientAuthenticationService, IdTokenHintsService],
})
export class TokenModule {}
