import { Module } from '@nestjs/common';
import { ClientsModule } from '../../clients/clients.module.js';
import { UsersModule } from '../../users/users.module.js';
import { GrantsModule } from '../../grants/grants.module.js';
import { GrantsListCommand } from './grants-list.command.js';
import { GrantsRevokeCommand } from './grants-revoke.command.js';

/** The grants:* commands: a user's signed-in devices, and signing them out. */
@Module({
  imports: [UsersModule, ClientsModule, GrantsModule],
  providers: [GrantsListCommand, GrantsRevokeCommand],
})
export class GrantCommandsModule {}
