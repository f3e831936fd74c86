import { type DynamicModule, Module } from '@nestjs/common';
import type { Logger } from 'pino';
import { ClientsModule } from './clients/clients.module.js';
import { ClientCommandsModule } from './clients/commands/client-commands.module.js';
import { SecurityEventsModule } from './common/logging/security-events.module.js';
import { ConfigModule } from './config/config.module.js';
import type { Env } from './config/env.js';
import { DatabaseModule } from './database/database.module.js';
import { KeysListCommand } from './keys/commands/keys-list.command.js';
import { KeysRevokeCommand } from './keys/commands/keys-revoke.command.js';
import { KeysRotateCommand } from './keys/commands/keys-rotate.command.js';
import { KeysModule } from './keys/keys.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { NotificationPublishCommand } from './notification/commands/notification-publish.command.js';
import { NotificationPublishingModule } from './notification/notification-publishing.module.js';
import { GrantsRevokeCommand } from './token/commands/grants-revoke.command.js';
import { SignOutsModule } from './token/sign-outs.module.js';
import { UserDisableCommand, UserEnableCommand, UserSetPasswordCommand } from './users/commands/user-account.commands.js';
import { UserListCommand, UserUnlockCommand } from './users/commands/user-admin.commands.js';
import { UserCreateCommand } from './users/commands/user-create.command.js';
import { UsersModule } from './users/users.module.js';

/**
 * The admin CLI: the feature modules it administers, without the HTTP server. Not KeysInstanceModule:
 * a CLI command never creates or replaces keys implicitly, whatever SIGNING_ALG says.
 */
@Module({})
export class CliModule {
  static forRoot(env: Env, databaseUrl: string, logger: Logger): DynamicModule {
    return {
      module: CliModule,
      imports: [ConfigModule.forRoot(env), SecurityEventsModule.forRoot(logger), DatabaseModule.forRoot(databaseUrl), MetricsModule, ClientCommandsModule, ClientsModule, UsersModule, SignOutsModule, KeysModule, NotificationPublishingModule],
      providers: [
        UserCreateCommand,
        UserListCommand,
        UserUnlockCommand,
        UserSetPasswordCommand,
        UserDisableCommand,
        UserEnableCommand,
        GrantsRevokeCommand,
        KeysRotateCommand,
        KeysListCommand,
        KeysRevokeCommand,
        NotificationPublishCommand,
      ],
    };
  }
}
