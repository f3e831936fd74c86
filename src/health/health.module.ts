import { Module, type OnModuleInit } from '@nestjs/common';
import { TerminusModule, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { Env } from '../config/env.js';
import { HealthRegistry } from './health-registry.js';
import { HealthController } from './health.controller.js';

@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'json' })],
  controllers: [HealthController],
  providers: [HealthRegistry],
  exports: [HealthRegistry],
})
export class HealthModule implements OnModuleInit {
  constructor(
    private readonly registry: HealthRegistry,
    private readonly database: TypeOrmHealthIndicator,
    private readonly env: Env,
  ) {}

  onModuleInit() {
    this.registry.register('database', () => this.database.pingCheck('database', { timeout: this.env.HEALTH_DB_TIMEOUT_MS }));
  }
}
