import { Module } from '@nestjs/common';
import { HousekeepingModule } from '../database/housekeeping.module.js';
import { BrowserSessionsRetentionService } from './browser-sessions-retention.service.js';
import { BrowserSessionsRepository } from './browser-sessions.repository.js';

/** Browser sessions (single sign-on): who is signed in at the service in a browser, until when. */
@Module({
  imports: [HousekeepingModule],
  providers: [BrowserSessionsRepository, BrowserSessionsRetentionService],
  exports: [BrowserSessionsRepository],
})
export class SessionsModule {}
