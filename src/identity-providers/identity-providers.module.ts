import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdentityProviderEntity } from './identity-provider.entity.js';
import { IdentityProvidersService } from './identity-providers.service.js';
import { RelayHandOversRepository } from './relay/relay-hand-overs.repository.js';
import { RelayService } from './relay/relay.service.js';
import { RelayedTokensRepository } from './relay/relayed-tokens.repository.js';
import { SignInConfirmations } from './sign-in/sign-in-confirmations.js';
import { SignInMethods } from './sign-in-methods.service.js';
import { UpstreamClients } from './upstream-clients.service.js';
import { UpstreamSignIn } from './sign-in/upstream-sign-in.service.js';
import { UpstreamSignInsRepository } from './sign-in/upstream-sign-ins.repository.js';
import { UpstreamRecheck } from './sign-in/upstream-recheck.service.js';
import { UpstreamSessionsRepository } from './sign-in/upstream-sessions.repository.js';
import { UpstreamVault } from './upstream-vault.js';

/**
 * The portal's identity providers, upstream of the service: their registry, the service as a
 * relying party to each, and the round trip of a sign-in there. What a sign-in leads to (a
 * helper code, a device approval, relayed tokens) is the business of the flows that start it.
 */
@Module({
  imports: [TypeOrmModule.forFeature([IdentityProviderEntity])],
  providers: [RelayHandOversRepository, RelayService, RelayedTokensRepository, IdentityProvidersService, SignInConfirmations, SignInMethods, UpstreamClients, UpstreamSignIn, UpstreamSignInsRepository, UpstreamSessionsRepository, UpstreamRecheck, UpstreamVault],
  // The sign-in and relay repositories: for the instance module's purges too.
  exports: [RelayService, RelayHandOversRepository, RelayedTokensRepository, UpstreamRecheck, UpstreamSessionsRepository, UpstreamSignInsRepository, IdentityProvidersService, SignInConfirmations, SignInMethods, UpstreamClients, UpstreamSignIn, UpstreamVault],
})
export class IdentityProvidersModule {}
