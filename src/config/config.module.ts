import { type DynamicModule, Global, Module } from '@nestjs/common';
import { Env } from './env.js';

/** Provides the validated `Env` to every module; each app instance (or test) passes its own. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(env: Env): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: Env, useValue: env }], exports: [Env] };
  }
}
