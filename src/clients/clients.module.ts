import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module.js';
import { IdentityProvidersModule } from '../identity-providers/identity-providers.module.js';
import { GrantsModule } from '../grants/grants.module.js';
import { ClientEntity } from './client.entity.js';
import { ClientsRepository } from './clients.repository.js';
import { ClientsService } from './clients.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([ClientEntity]), GrantsModule, IdentityProvidersModule, AuditModule],
  providers: [ClientsRepository, ClientsService],
  exports: [ClientsService],
})
export class ClientsModule {}
