import { Module } from '@nestjs/common';
import { UsersModule } from '../users.module.js';
import { UserDisableCommand, UserEnableCommand, UserSetPasswordCommand } from './user-account.commands.js';
import { UserListCommand, UserUnlockCommand } from './user-admin.commands.js';
import { UserCreateCommand } from './user-create.command.js';

@Module({
  imports: [UsersModule],
  providers: [UserCreateCommand, UserListCommand, UserUnlockCommand, UserSetPasswordCommand, UserDisableCommand, UserEnableCommand],
})
export class UserCommandsModule {}
