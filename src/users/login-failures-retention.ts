import { Injectable, type OnModuleInit } from '@nestjs/common';
import { HousekeepingService } from '../database/housekeeping.service.js';
import { LoginThrottle } from './login-throttle.service.js';

/** Old slow-downs (failed sign-ins, wrong user codes) are forgotten in the housekeeping rounds. */
@Injectable()
export class LoginFailuresRetention implements OnModuleInit {
  constructor(
    private readonly housekeeping: HousekeepingService,
    private readonly throttle: LoginThrottle,
  ) {}

  onModuleInit() {
    this.housekeeping.register((limit) => this.throttle.purgeExpired(limit));
  }
}
