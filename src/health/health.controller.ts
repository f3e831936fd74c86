import { Controller, Get, HttpStatus, Res, ServiceUnavailableException } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import type { FastifyReply } from 'fastify';
import { Env } from '../config/env.js';
import { HealthRegistryService } from './health-registry.service.js';
import { HealthResponseDto, LivenessResponseDto } from './health-response.dto.js';
import { VERSION } from './version.js';

const NO_STORE = { 'Cache-Control': { description: '`no-store`', schema: { type: 'string' } } };

@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly registry: HealthRegistryService,
    private readonly env: Env,
  ) {}

  @Get()
  @ApiOperation({ summary: 'Whether every component the service needs is healthy (readiness: 503 while one is not, or while shutting down)' })
  @ApiOkResponse({ type: HealthResponseDto, headers: NO_STORE })
  @ApiServiceUnavailableResponse({ type: HealthResponseDto, headers: NO_STORE, description: '`status: "down"`; `info` names the failing components (database, listener), or says the instance is shutting down' })
  async check(@Res({ passthrough: true }) reply: FastifyReply): Promise<HealthResponseDto> {
    const failing = await this.failingComponents();
    reply.header('Cache-Control', 'no-store');
    if (failing.length > 0) reply.status(HttpStatus.SERVICE_UNAVAILABLE);
    return {
      status: failing.length > 0 ? 'down' : 'up',
      version: VERSION,
      info: failing.length > 0 ? `unhealthy: ${failing.join(', ')}` : 'all components healthy',
      timestamp: new Date().toISOString(),
      env: this.env.APP_ENV,
    };
  }

  @Get('live')
  @ApiOperation({ summary: 'Liveness: 200 while the process runs' })
  @ApiOkResponse({ type: LivenessResponseDto })
  live(): LivenessResponseDto {
    return { status: 'up' };
  }

  private async failingComponents(): Promise<string[]> {
    if (this.registry.isShuttingDown) return ['shutting down'];
    try {
      await this.health.check(this.registry.checks());
      return [];
    } catch (error) {
      if (!(error instanceof ServiceUnavailableException)) throw error;
      const result = error.getResponse() as HealthCheckResult;
      return Object.entries(result.error ?? {}).map(([name, detail]) => (detail?.message ? `${name} (${detail.message})` : name));
    }
  }
}
