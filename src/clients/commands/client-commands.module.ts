import { Module } from '@nestjs/common';
import { ClientsModule } from '../clients.module.js';
import { ClientCreateCommand } from './client-create.command.js';
import { ClientDeleteCommand, ClientDisableCommand, ClientEnableCommand, ClientRotateSecretCommand } from './client-admin.commands.js';
import { ClientListCommand, ClientShowCommand } from './client-query.commands.js';
import { ClientUpdateCommand } from './client-update.command.js';

@Module({
  imports: [ClientsModule],
  providers: [ClientCreateCommand, ClientListCommand, ClientShowCommand, ClientRotateSecretCommand, ClientDisableCommand, ClientEnableCommand, ClientUpdateCommand, ClientDeleteCommand],
})
export class ClientCommandsModule {}
