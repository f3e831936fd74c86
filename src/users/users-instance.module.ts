import { Module } from '@nestjs/common';
import { HousekeepingModule } from '../database/housekeeping.module.js';
import { LoginFailuresRetentionService } from './login-failures-retention.service.js';
import { UsersModule } from './users.module.js';

/** What a running service instance adds to the users: the purge of old slow-downs. Only AppModule imports it. */
@Module({
  imports: [UsersModule, HousekeepingModule],
  providers: [LoginFailuresRetentionService],
})
export class UsersInstanceModule {}
