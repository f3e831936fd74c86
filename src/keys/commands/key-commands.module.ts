import { Module } from '@nestjs/common';
import { KeysModule } from '../keys.module.js';
import { KeysListCommand } from './keys-list.command.js';
import { KeysRevokeCommand } from './keys-revoke.command.js';
import { KeysRotateCommand } from './keys-rotate.command.js';

/** Not KeysInstanceModule: a command never creates or replaces keys implicitly, whatever SIGNING_ALG says. */
@Module({
  imports: [KeysModule],
  providers: [KeysRotateCommand, KeysListCommand, KeysRevokeCommand],
})
export class KeyCommandsModule {}
