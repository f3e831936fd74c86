import { Injectable, type OnModuleInit } from '@nestjs/common';
import { Metrics } from '../metrics/metrics.service.js';
import { DeviceCodesRepository } from './device-codes.repository.js';
import { HousekeepingService } from '../database/housekeeping.service.js';

/**
 * Expired device authorizations are deleted with the other expired rows, in batches; those no
 * user decided on are counted as expired.
 */
@Injectable()
export class DeviceCodeRetention implements OnModuleInit {
  constructor(
    private readonly housekeeping: HousekeepingService,
    private readonly deviceCodes: DeviceCodesRepository,
    private readonly metrics: Metrics,
  ) {}

  onModuleInit() {
    this.housekeeping.register(async (limit) => {
      const { deleted, undecided } = await this.deviceCodes.purgeExpired(limit);
      if (undecided > 0) this.metrics.deviceAuthorizations.inc({ event: 'expired' }, undecided);
      return deleted;
    });
  }
}
