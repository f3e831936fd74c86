import type { Logger as TypeOrmLogger } from 'typeorm';
import type { MetricsService } from '../metrics/metrics.service.js';
import { databaseUnavailableReason } from '../common/errors/database-unavailable.js';

/**
 * TypeORM's logger, used for one thing: counting statements that failed because PostgreSQL was
 * away or busy (timeouts, lock waits, lost connections). Queries themselves are never logged:
 * their parameters may carry secrets.
 */
export class QueryErrorCounter implements TypeOrmLogger {
  constructor(private readonly metrics: MetricsService) {}

  logQueryError(error: string | Error): void {
    const reason = databaseUnavailableReason(error);
    if (reason) this.metrics.databaseUnavailable.inc({ reason });
  }

  logQuery(): void {}
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
}
