import { Injectable, type OnModuleInit } from '@nestjs/common';
import { MetricsService } from '../../metrics/metrics.service.js';
import { DeliveryService } from '../delivery/delivery.service.js';
import { NotificationGateway } from './notification.gateway.js';

/** Scrape-time gauges of the stream, read from memory: a scrape never queries the database. */
@Injectable()
export class NotificationMetricsService implements OnModuleInit {
  constructor(
    private readonly metrics: MetricsService,
    private readonly gateway: NotificationGateway,
    private readonly delivery: DeliveryService,
  ) {}

  onModuleInit() {
    this.metrics.gauge('ws_connections_open', 'Stream connections open on this instance', () => this.gateway.openConnections);
    this.metrics.gauge(
      'notification_oldest_unconfirmed_seconds',
      'Age of the oldest notification a recipient connected here has not confirmed yet, or has not been read for it (0 when none)',
      () => this.delivery.oldestUnconfirmedAgeMs() / 1000,
    );
  }
}
