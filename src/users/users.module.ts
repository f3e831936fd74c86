import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module.js';
import { GrantsModule } from '../grants/grants.module.js';
import { LoginThrottleService } from './login-throttle.service.js';
import { PasswordCheckGateService } from './password-check-gate.service.js';
import { UserEntity } from './user.entity.js';
import { UsersService } from './users.service.js';

/** Portal users: their records, password checks, and the failed-login slow-down that guards them. */
@Module({
  imports: [TypeOrmModule.forFeature([UserEntity]), GrantsModule, AuditModule],
  providers: [UsersService, PasswordCheckGateService, LoginThrottleService],
  exports: [UsersService, PasswordCheckGateService, LoginThrottleService],
})
export class UsersModule {}
