import { Module } from '@nestjs/common';
import { BrowserSessionsRepository } from './browser-sessions.repository.js';

/** Browser sessions (single sign-on): who is signed in at the service in a browser, until when. */
@Module({
  providers: [BrowserSessionsRepository],
  exports: [BrowserSessionsRepository],
})
export class SessionsModule {}
