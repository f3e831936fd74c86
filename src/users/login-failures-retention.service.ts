import { Injectable, type OnModuleInit } from '@nestjs/common';
import { HousekeepingService } from '../database/housekeeping.service.js';
import { LoginThrottleService } from './login-throttle.service.js';

/** Old slow-downs (failed sign-ins, wrong user codes) are forgotten in the housekeeping rounds. */
@Injectable()
export class LoginFailuresRetentionService implements OnModuleInit {
  constructor(
    private readonly housekeeping: HousekeepingService,
    private readonly throttle: LoginThrottleService,
  ) {}

  onModuleInit() {
    this.housekeeping.register((limit) => this.throttle.purgeExpired(limit));
  }
}
