import { Injectable, type OnModuleInit } from '@nestjs/common';
import { HousekeepingService } from '../token/housekeeping.service.js';
import { DeviceCodesRepository } from './device-codes.repository.js';

/** Expired device authorizations are deleted with the other expired rows, in batches. */
@Injectable()
export class DeviceCodeRetention implements OnModuleInit {
  constructor(
    private readonly housekeeping: HousekeepingService,
    private readonly deviceCodes: DeviceCodesRepository,
  ) {}

  onModuleInit() {
    this.housekeeping.register((limit) => this.deviceCodes.purgeExpired(limit));
  }
}
