import { Injectable, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { HousekeepingService, purgeStatement } from '../database/housekeeping.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { DeviceCodesRepository } from './device-codes.repository.js';

/**
 * Expired codes, purged in the housekeeping rounds. Consumed codes are kept until they expire, so
 * a replay inside their lifetime is still recognised as one.
 */
const EXPIRED_CODE_PURGES = [
  `DELETE FROM authorizations WHERE ctid IN (SELECT ctid FROM authorizations WHERE expires_at < now() LIMIT $1)`,
  `DELETE FROM authorization_codes WHERE ctid IN (SELECT ctid FROM authorization_codes WHERE expires_at < now() LIMIT $1)`,
];

@Injectable()
export class CodeRetentionService implements OnModuleInit {
  constructor(
    private readonly housekeeping: HousekeepingService,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly deviceCodes: DeviceCodesRepository,
    private readonly metrics: MetricsService,
  ) {}

  onModuleInit() {
    for (const sql of EXPIRED_CODE_PURGES) this.housekeeping.register(purgeStatement(this.dataSource, sql));
    // Device authorizations no user decided on are counted as expired.
    this.housekeeping.register(async (limit) => {
      const { deleted, undecided } = await this.deviceCodes.purgeExpired(limit);
      if (undecided > 0) this.metrics.deviceAuthorizations.inc({ event: 'expired' }, undecided);
      return deleted;
    });
  }
}
