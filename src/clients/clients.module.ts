import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdentityProvidersModule } from '../identity-providers/identity-providers.module.js';
import { SignOutsModule } from '../token/sign-outs.module.js';
import { ClientEntity } from './client.entity.js';
import { ClientsRepository } from './clients.repository.js';
import { ClientsService } from './clients.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([ClientEntity]), SignOutsModule, IdentityProvidersModule],
  providers: [ClientsRepository, ClientsService],
  exports: [ClientsService],
})
export class ClientsModule {}
