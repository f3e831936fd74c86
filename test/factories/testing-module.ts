import { ConsoleLogger, type DynamicModule, type Type } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { pino } from 'pino';
import { SecurityEventsModule } from '../../src/common/logging/security-events.module.js';
import { ConfigModule } from '../../src/config/config.module.js';
import { loadEnv } from '../../src/config/env.js';
import { DatabaseModule } from '../../src/database/database.module.js';

/**
 * One feature module on the database at `url` (migrated on start), with its own settings
 * (`vars` as environment variables). Initialised, so lifecycle hooks such as key creation ran.
 */
export async function startTestingModule(url: string, feature: Type | DynamicModule, vars: Record<string, string> = {}): Promise<TestingModule> {
  const app = await Test.createTestingModule({
    imports: [ConfigModule.forRoot(loadEnv({ ...vars, DATABASE_URL: url })), SecurityEventsModule.forRoot(pino({ level: 'silent' })), DatabaseModule.forRoot(url), feature],
  })
    .setLogger(new ConsoleLogger({ logLevels: ['error', 'fatal'] }))
    .compile();
  try {
    await app.init();
  } catch (error) {
    await app.close();
    throw error;
  }
  return app;
}
