import { type DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Env } from '../config/env.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { dataSourceOptions, runMigrations } from './data-source.js';
import { DatabaseUrl } from './database-url.js';
import { PgListenerService } from './pg-listener.service.js';
import { QueryErrorCounter } from './query-error-counter.js';
import { SchemaStatus } from './schema-status.js';

/** The TypeORM data source on `url`, migrated before any feature module starts; the URL itself for LISTEN. */
@Module({})
export class DatabaseModule {
  static forRoot(url: string): DynamicModule {
    const schema = new SchemaStatus();
    return {
      module: DatabaseModule,
      global: true,
      providers: [{ provide: DatabaseUrl, useValue: new DatabaseUrl(url) }, { provide: SchemaStatus, useValue: schema }, PgListenerService],
      exports: [DatabaseUrl, SchemaStatus, PgListenerService],
      imports: [
        // Database errors and listener reconnects are counted.
        MetricsModule,
        TypeOrmModule.forRootAsync({
          inject: [Env, MetricsService],
          useFactory: async (env: Env, metrics: MetricsService) => ({
            ...(await dataSourceOptions(url, env.DATABASE_POOL_SIZE, {
              connectTimeoutMs: env.DATABASE_CONNECT_TIMEOUT_MS,
              statementTimeoutMs: env.DATABASE_STATEMENT_TIMEOUT_MS,
              lockTimeoutMs: env.DATABASE_LOCK_TIMEOUT_MS,
            })),
            autoLoadEntities: true,
            logger: new QueryErrorCounter(metrics),
            // openDatabaseServer has connected once already: a failure here is no slow start to
            // wait out (retrying would log ten stacks over half a minute), start-up reports it.
            toRetry: () => false,
          }),
          dataSourceFactory: async (options) => {
            // Migrations run on a connection of their own, without the service's timeouts: they may
            // take long, and wait for another instance that is migrating.
            const migrator = await new DataSource(await dataSourceOptions(url, 2)).initialize();
            try {
              schema.applied = await runMigrations(migrator);
            } finally {
              await migrator.destroy();
            }
            return new DataSource(options!).initialize();
          },
        }),
      ],
    };
  }
}
