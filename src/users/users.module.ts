import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { GrantsModule } from '../grants/grants.module.js';
import { LoginThrottle } from './login-throttle.service.js';
import { PasswordCheckGate } from './password-check-gate.js';
import { UserEntity } from './user.entity.js';
import { UsersService } from './users.service.js';

/** Portal users: their records, password checks, and the failed-login slow-down that guards them. */
@Module({
  imports: [TypeOrmModule.forFeature([UserEntity]), GrantsModule],
  providers: [UsersService, PasswordCheckGate, LoginThrottle],
  exports: [UsersService, PasswordCheckGate, LoginThrottle],
})
export class UsersModule {}
