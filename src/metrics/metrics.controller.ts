import { Controller, Get, Header, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponse } from '../common/errors/api-error-response.decorator.js';
import { MetricsAccessGuard } from './metrics-access.guard.js';
import { MetricsService } from './metrics.service.js';

@ApiTags('health')
@Controller('metrics')
@UseGuards(MetricsAccessGuard)
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'Prometheus metrics: connections, closes by code, tokens by grant, notifications, latencies' })
  @ApiOkResponse({
    description: 'Prometheus text exposition format 0.0.4; read from memory, never from the database',
    content: { 'text/plain': { schema: { type: 'string' } } },
    headers: { 'Cache-Control': { description: '`no-store`', schema: { type: 'string' } } },
  })
  @ApiErrorResponse(403, 'the client address (behind a trusted proxy, the forwarded one) is not in METRICS_ALLOWED_CIDRS')
  // Every figure, gauges included, is read from this process's memory: a scrape never queries the database.
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
