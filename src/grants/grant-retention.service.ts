import { Injectable, type OnModuleInit } from '@nestjs/common';
import { HousekeepingService } from '../database/housekeeping.service.js';
import { GrantsRepository } from './grants.repository.js';
import { RefreshTokensRepository } from './refresh-tokens.repository.js';

/**
 * Expired refresh tokens, then the grants they leave with nothing alive, are deleted with the
 * other expired rows, in batches: in this order, so one round purges both. An upstream session
 * such a grant referred to goes in a later round (its purge runs first and keeps it while a grant does).
 * Provided by TokenModule, beside the scheduler it registers with.
 */
@Injectable()
export class GrantRetentionService implements OnModuleInit {
  constructor(
    private readonly housekeeping: HousekeepingService,
    private readonly grants: GrantsRepository,
    private readonly refreshTokens: RefreshTokensRepository,
  ) {}

  onModuleInit() {
    this.housekeeping.register((limit) => this.refreshTokens.purgeExpired(limit));
    this.housekeeping.register((limit) => this.grants.purgeSpent(limit));
  }
}
