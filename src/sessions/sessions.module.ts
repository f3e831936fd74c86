import { Module } from '@nestjs/common';
import { HousekeepingModule } from '../database/housekeeping.module.js';
import { BrowserSessionsRetention } from './browser-sessions-retention.js';
import { BrowserSessionsRepository } from './browser-sessions.repository.js';

/** Browser sessions (single sign-on): who is signed in at the service in a browser, until when. */
@Module({
  imports: [HousekeepingModule],
  providers: [BrowserSessionsRepository, BrowserSessionsRetention],
  exports: [BrowserSessionsRepository],
})
export class SessionsModule {}
