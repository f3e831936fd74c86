import { Injectable, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Metrics } from '../metrics/metrics.service.js';
import { NotificationGateway } from './notification.gateway.js';

/** Scrape-time gauges of the stream: open connections here, and notifications not yet pushed anywhere. */
@Injectable()
export class NotificationMetrics implements OnModuleInit {
  constructor(
    private readonly metrics: Metrics,
    private readonly gateway: NotificationGateway,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  onModuleInit() {
    this.metrics.gauge('ws_connections_open', 'Stream connections open on this instance', () => this.gateway.openConnections);
    this.metrics.gauge('notifications_pending', 'Retained notifications past their recipient’s delivery cursor', async () => {
      const [row] = await this.dataSource.query(
        `SELECT count(*) AS pending FROM notifications n LEFT JOIN delivery_cursors c ON c.client_id = n.recipient
         WHERE n.seq > coalesce(c.delivered_seq, 0) AND n.expires_at > now()`,
      );
      return Number(row.pending);
    });
  }
}
