import { Module } from '@nestjs/common';
import { IdentityProvidersModule } from '../identity-providers.module.js';
import { IdpDeleteCommand, IdpRotateSecretCommand } from './idp-admin.commands.js';
import { IdpCreateCommand } from './idp-create.command.js';
import { IdpListCommand, IdpShowCommand } from './idp-query.commands.js';
import { IdpUpdateCommand } from './idp-update.command.js';

@Module({
  imports: [IdentityProvidersModule],
  providers: [IdpCreateCommand, IdpListCommand, IdpShowCommand, IdpUpdateCommand, IdpRotateSecretCommand, IdpDeleteCommand],
})
export class IdpCommandsModule {}
