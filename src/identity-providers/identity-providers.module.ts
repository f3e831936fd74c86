import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module.js';
import { IdentityProviderEntity } from './identity-provider.entity.js';
import { IdentityProvidersService } from './identity-providers.service.js';
import { RelayHandOversRepository } from './relay/relay-hand-overs.repository.js';
import { RelayService } from './relay/relay.service.js';
import { RelayedTokensRepository } from './relay/relayed-tokens.repository.js';
import { SignInConfirmationsService } from './sign-in/sign-in-confirmations.service.js';
import { SignInMethodsService } from './sign-in-methods.service.js';
import { UpstreamClientsService } from './upstream-clients.service.js';
import { UpstreamSignInService } from './sign-in/upstream-sign-in.service.js';
import { UpstreamSignInsRepository } from './sign-in/upstream-sign-ins.repository.js';
import { UpstreamRecheckService } from './sign-in/upstream-recheck.service.js';
import { UpstreamSessionsRepository } from './sign-in/upstream-sessions.repository.js';
import { UpstreamVaultService } from './upstream-vault.service.js';

/**
 * The portal's identity providers, upstream of the service: their registry, the service as a
 * relying party to each, and the round trip of a sign-in there. What a sign-in leads to (a
 * helper code, a device approval, relayed tokens) is the business of the flows that start it.
 */
@Module({
  imports: [TypeOrmModule.forFeature([IdentityProviderEntity]), AuditModule],
  providers: [RelayHandOversRepository, RelayService, RelayedTokensRepository, IdentityProvidersService, SignInConfirmationsService, SignInMethodsService, UpstreamClientsService, UpstreamSignInService, UpstreamSignInsRepository, UpstreamSessionsRepository, UpstreamRecheckService, UpstreamVaultService],
  // The sign-in and relay repositories: for the instance module's purges too.
  exports: [RelayService, RelayHandOversRepository, RelayedTokensRepository, UpstreamRecheckService, UpstreamSessionsRepository, UpstreamSignInsRepository, IdentityProvidersService, SignInConfirmationsService, SignInMethodsService, UpstreamClientsService, UpstreamSignInService, UpstreamVaultService],
})
export class IdentityProvidersModule {}
