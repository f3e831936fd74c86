import { type DynamicModule, Global, Module } from '@nestjs/common';
import type { Logger } from 'pino';
import { SecurityEvents } from './security-events.js';

/** Provides `SecurityEvents`, writing to `logger`, to every module of an application. */
@Global()
@Module({})
export class SecurityEventsModule {
  static forRoot(logger: Logger): DynamicModule {
    return { module: SecurityEventsModule, providers: [{ provide: SecurityEvents, useValue: new SecurityEvents(logger) }], exports: [SecurityEvents] };
  }
}
