import { type DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Env } from '../config/env.js';
import { dataSourceOptions, runMigrations } from './data-source.js';
import { DatabaseUrl } from './database-url.js';
import { PgListener } from './pg-listener.service.js';

/** The TypeORM data source on `url`, migrated before any feature module starts; the URL itself for LISTEN. */
@Module({})
export class DatabaseModule {
  static forRoot(url: string): DynamicModule {
    return {
      module: DatabaseModule,
      global: true,
      providers: [{ provide: DatabaseUrl, useValue: new DatabaseUrl(url) }, PgListener],
      exports: [DatabaseUrl, PgListener],
      imports: [
        TypeOrmModule.forRootAsync({
          inject: [Env],
          useFactory: async (env: Env) => ({ ...(await dataSourceOptions(url, env.DATABASE_POOL_SIZE)), autoLoadEntities: true }),
          dataSourceFactory: async (options) => {
            const dataSource = await new DataSource(options!).initialize();
            await runMigrations(dataSource);
            return dataSource;
          },
        }),
      ],
    };
  }
}
