import { Injectable, type OnModuleInit } from '@nestjs/common';
import { HousekeepingService } from '../database/housekeeping.service.js';
import { BrowserSessionsRepository } from './browser-sessions.repository.js';

/** Browser sessions past SESSION_TTL are deleted in the housekeeping rounds. */
@Injectable()
export class BrowserSessionsRetentionService implements OnModuleInit {
  constructor(
    private readonly housekeeping: HousekeepingService,
    private readonly sessions: BrowserSessionsRepository,
  ) {}

  onModuleInit() {
    this.housekeeping.register((limit) => this.sessions.purgeExpired(limit));
  }
}
