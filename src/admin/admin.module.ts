import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module.js';
import { BearerModule } from '../bearer/bearer.module.js';
import { ClientsModule } from '../clients/clients.module.js';
import { GrantsModule } from '../grants/grants.module.js';
import { IdentityProvidersModule } from '../identity-providers/identity-providers.module.js';
import { KeysModule } from '../keys/keys.module.js';
import { UsersModule } from '../users/users.module.js';
import { ActingClientInterceptor } from './acting-client.interceptor.js';
import { AdminClientsController } from './admin-clients.controller.js';
import { AdminEventsController } from './admin-events.controller.js';
import { AdminIdentityProvidersController } from './admin-identity-providers.controller.js';
import { AdminKeysController } from './admin-keys.controller.js';
import { AdminUsersController } from './admin-users.controller.js';

/**
 * The admin API (`/admin/v1`): the CLI's registries over HTTP for a portal's backend and support
 * desk, with the CLI's rules (the same services), authorised by admin:read / admin:write tokens.
 * It owns no data: each route calls the service its CLI command calls.
 */
@Module({
  imports: [AuditModule, BearerModule, ClientsModule, GrantsModule, IdentityProvidersModule, KeysModule, UsersModule],
  controllers: [AdminClientsController, AdminUsersController, AdminKeysController, AdminIdentityProvidersController, AdminEventsController],
  providers: [ActingClientInterceptor],
})
export class AdminModule {}
