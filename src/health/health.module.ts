import { Module, type OnModuleInit } from '@nestjs/common';
import { TerminusModule, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { Env } from '../config/env.js';
import { HealthRegistryService } from './health-registry.service.js';
import { HealthController } from './health.controller.js';

@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'json' })],
  controllers: [HealthController],
  providers: [HealthRegistryService],
  exports: [HealthRegistryService],
})
export class HealthModule implements OnModuleInit {
  constructor(
    private readonly registry: HealthRegistryService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly env: Env,
  ) {}

  onModuleInit() {
    this.registry.register('database', () => this.database.pingCheck('database', { timeout: this.env.HEALTH_DB_TIMEOUT_MS }));
  }
}
