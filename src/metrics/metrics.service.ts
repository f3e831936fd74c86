import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The service's Prometheus metrics, in a registry of its own (not prom-client's global one), so
 * several app instances in one process each report their own figures.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  readonly tokensIssued = new Counter({
    name: 'oauth_tokens_issued_total',
    help: 'Access tokens issued, by grant type',
    labelNames: ['grant'] as const,
    registers: [this.registry],
  });

  readonly deviceAuthorizations = new Counter({
    name: 'device_authorizations_total',
    help: 'Device authorizations (RFC 8628) by event: started, approved, denied, expired (purged before the user decided)',
    labelNames: ['event'] as const,
    registers: [this.registry],
  });

  readonly devicePolls = new Counter({
    name: 'device_code_polls_total',
    help: 'Polls of the device grant by outcome: approved (tokens issued), authorization_pending, slow_down, access_denied, expired_token, invalid_grant',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly upstreamSignIns = new Counter({
    name: 'upstream_sign_ins_total',
    help: 'Sign-ins that came back from an identity provider, by provider and outcome: signed_in, cancelled, refused (not this browser\'s, used, expired), unreachable, invalid (a check of the answer failed)',
    labelNames: ['provider', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly upstreamRechecks = new Counter({
    name: 'upstream_rechecks_total',
    help: 'Re-checks of brokered users at their provider before a refresh, by outcome: confirmed, refused (the grant revoked), unreachable (503), busy (another refresh of the grant was checking: 503)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly wsConnects = new Counter({ name: 'ws_connections_total', help: 'Stream connections accepted', registers: [this.registry] });

  readonly wsCloses = new Counter({
    name: 'ws_closes_total',
    help: 'Stream connections closed, by close code',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });

  readonly notificationsPublished = new Counter({
    name: 'notifications_published_total',
    help: 'Notifications stored (repeats of a stored one are not counted)',
    registers: [this.registry],
  });

  readonly notificationsDelivered = new Counter({
    name: 'notifications_delivered_total',
    help: 'Notification messages written to stream connections',
    registers: [this.registry],
  });

  readonly publishToPush = new Histogram({
    name: 'notification_publish_to_push_seconds',
    help: 'Time from a notification being stored to its push on a live connection',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30],
    registers: [this.registry],
  });

  readonly databaseUnavailable = new Counter({
    name: 'database_unavailable_errors_total',
    help: 'Statements that failed because PostgreSQL was away or busy, by reason (timeout, lock, connection, overload)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly listenerReconnects = new Counter({
    name: 'pg_listener_reconnects_total',
    help: 'Times the LISTEN connection was lost and opened again',
    registers: [this.registry],
  });

  readonly cursorFlushFailures = new Counter({
    name: 'delivery_cursor_flush_failures_total',
    help: 'Delivery cursor saves that failed (they are retried at the next flush)',
    registers: [this.registry],
  });

  /** httpDuration's series by method, route and status: found by one string instead of hashing the labels on every request. */
  private readonly httpSeries = new Map<string, { observe(seconds: number): void }>();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** One request's latency. Routes are patterns and methods and statuses are few, so the series stay few. */
  observeHttp(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let series = this.httpSeries.get(key);
    if (!series) {
      series = this.httpDuration.labels({ method, route, status });
      this.httpSeries.set(key, series);
    }
    series.observe(seconds);
  }

  /** A gauge read when scraped (open connections, pending notifications). */
  gauge(name: string, help: string, read: () => number | Promise<number>): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      async collect() {
        this.set(await read());
      },
    });
  }
}
