import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { HousekeepingModule } from '../database/housekeeping.module.js';
import { IdentityProviderEntity } from './identity-provider.entity.js';
import { IdentityProvidersModule } from './identity-providers.module.js';
import { UpstreamRetentionService } from './upstream-retention.service.js';
import { UpstreamSecretsCheckService } from './upstream-secrets-check.service.js';

/**
 * What a running service instance adds to the identity providers: the start-up check of their
 * stored secrets, and the purge of what sign-ins through them leave behind. Only AppModule imports it.
 */
@Module({
  imports: [IdentityProvidersModule, HousekeepingModule, TypeOrmModule.forFeature([IdentityProviderEntity])],
  providers: [UpstreamRetentionService, UpstreamSecretsCheckService],
})
export class IdentityProvidersInstanceModule {}
