import { Module } from '@nestjs/common';
import { ClientsModule } from '../clients/clients.module.js';
import { CodesModule } from '../codes/codes.module.js';
import { GrantRetention } from '../grants/grant-retention.js';
import { GrantsModule } from '../grants/grants.module.js';
import { RevokedGrantsModule } from '../grants/revoked-grants.module.js';
import { HousekeepingModule } from '../database/housekeeping.module.js';
import { IdentityProvidersModule } from '../identity-providers/identity-providers.module.js';
import { KeysModule } from '../keys/keys.module.js';
import { AccessTokens } from './access-tokens.service.js';
import { ClientAuthentication } from './client-authentication.js';
import { AuthorizationCodeGrant } from './grants/authorization-code.grant.js';
import { ClientCredentialsGrant } from './grants/client-credentials.grant.js';
import { DeviceCodeGrant } from './grants/device-code.grant.js';
import { RefreshTokenGrant } from './grants/refresh-token.grant.js';
import { IdTokenHints } from './id-token-hints.js';
import { IdTokens } from './id-tokens.js';
import { IdentityTokenController } from './identity-token.controller.js';
import { MetadataController } from './metadata.controller.js';
import { TokenInspectionController } from './token-inspection.controller.js';
import { TokenInspectionService } from './token-inspection.service.js';
import { TokenController } from './token.controller.js';
import { TokenRetention } from './token-retention.js';
import { TokenService } from './token.service.js';
import { UserTokenIssuer } from './user-token-issuer.js';

@Module({
  imports: [ClientsModule, CodesModule, GrantsModule, HousekeepingModule, IdentityProvidersModule, KeysModule, RevokedGrantsModule],
  controllers: [TokenController, TokenInspectionController, MetadataController, IdentityTokenController],
  providers: [
    AccessTokens,
    AuthorizationCodeGrant,
    ClientAuthentication,
    ClientCredentialsGrant,
    DeviceCodeGrant,
    GrantRetention,
    IdTokenHints,
    IdTokens,
    RefreshTokenGrant,
    TokenInspectionService,
    TokenRetention,
    TokenService,
    UserTokenIssuer,
  ],
  exports: [AccessTokens, ClientAuthentication, IdTokenHints],
})
export class TokenModule {}
