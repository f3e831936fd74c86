import { type DynamicModule, Module, type Type } from '@nestjs/common';
import type { Logger } from 'pino';
import { SecurityEventsModule } from './common/logging/security-events.module.js';
import { ConfigModule } from './config/config.module.js';
import type { Env } from './config/env.js';
import { DatabaseModule } from './database/database.module.js';

/**
 * The admin CLI's commands, one module per feature, keyed by the part of a command's name before
 * ":". A command loads only its own feature's module: the others are never imported or built.
 */
export const COMMAND_GROUPS: Record<string, () => Promise<Type>> = {
  client: async () => (await import('./clients/commands/client-commands.module.js')).ClientCommandsModule,
  user: async () => (await import('./users/commands/user-commands.module.js')).UserCommandsModule,
  grants: async () => (await import('./admin/commands/grant-commands.module.js')).GrantCommandsModule,
  idp: async () => (await import('./identity-providers/commands/idp-commands.module.js')).IdpCommandsModule,
  keys: async () => (await import('./keys/commands/key-commands.module.js')).KeyCommandsModule,
  events: async () => (await import('./audit/commands/audit-commands.module.js')).AuditCommandsModule,
  notification: async () => (await import('./notification/publish/commands/notification-commands.module.js')).NotificationCommandsModule,
};

/** The admin CLI: the command modules it runs, on the service's database, without the HTTP server. */
@Module({})
export class CliModule {
  static forRoot(env: Env, databaseUrl: string, securityLog: Logger, commandModules: Type[]): DynamicModule {
    return {
      module: CliModule,
      imports: [ConfigModule.forRoot(env), SecurityEventsModule.forRoot(securityLog), DatabaseModule.forRoot(databaseUrl), ...commandModules],
    };
  }
}
