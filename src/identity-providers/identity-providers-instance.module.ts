import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdentityProviderEntity } from './identity-provider.entity.js';
import { IdentityProvidersModule } from './identity-providers.module.js';
import { UpstreamSecretsCheck } from './upstream-secrets-check.js';

/** What a running service instance adds to the identity providers: the start-up check of their stored secrets. Only AppModule imports it. */
@Module({
  imports: [IdentityProvidersModule, TypeOrmModule.forFeature([IdentityProviderEntity])],
  providers: [UpstreamSecretsCheck],
})
export class IdentityProvidersInstanceModule {}
