import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import type { Logger } from 'pino';
import { AdminModule } from './admin/admin.module.js';
import { AuditInstanceModule } from './audit/audit-instance.module.js';
import { ClientsModule } from './clients/clients.module.js';
import { SecurityEventsModule } from './common/logging/security-events.module.js';
import { ConfigModule } from './config/config.module.js';
import type { Env } from './config/env.js';
import { DatabaseModule } from './database/database.module.js';
import { DeviceFlowModule } from './device-flow/device-flow.module.js';
import { IdentityProvidersInstanceModule } from './identity-providers/identity-providers-instance.module.js';
import { ExceptionRoutingFilter } from './exception-routing.filter.js';
import { HealthModule } from './health/health.module.js';
import { KeysInstanceModule } from './keys/keys-instance.module.js';
import { KeysModule } from './keys/keys.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { NotificationModule } from './notification/notification.module.js';
import { OAuthHelperModule } from './oauth-helper/oauth-helper.module.js';
import { OidcModule } from './oidc/oidc.module.js';
import { PortalModule } from './portal/portal.module.js';
import { RegistrationModule } from './registration/registration.module.js';
import { TokenModule } from './token/token.module.js';
import { UpstreamCallbackModule } from './upstream-callback/upstream-callback.module.js';
import { UsersInstanceModule } from './users/users-instance.module.js';
import { UsersModule } from './users/users.module.js';

@Module({})
export class AppModule {
  static forRoot(env: Env, databaseUrl: string, logger: Logger): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(env),
        SecurityEventsModule.forRoot(logger),
        DatabaseModule.forRoot(databaseUrl),
        MetricsModule,
        // Purges the audit trail after AUDIT_RETENTION with the housekeeping rounds: the service only.
        AuditInstanceModule,
        ClientsModule,
        UsersModule,
        // Purges old login slow-downs with the housekeeping rounds: the service only.
        UsersInstanceModule,
        KeysModule,
        // Creates or replaces the active key at start and listens for revocations: the service only.
        KeysInstanceModule,
        TokenModule,
        OAuthHelperModule,
        DeviceFlowModule,
        UpstreamCallbackModule,
        // Stops the start when KEYS_ENCRYPTION_KEY cannot open the providers' stored secrets: the service only.
        IdentityProvidersInstanceModule,
        NotificationModule,
        OidcModule,
        RegistrationModule,
        AdminModule,
        HealthModule,
        PortalModule,
      ],
      providers: [
        { provide: APP_FILTER, useClass: ExceptionRoutingFilter },
      ],
    };
  }
}
