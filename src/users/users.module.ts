import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { UserEntity } from './user.entity.js';
import { PasswordCheckGate } from './password-check-gate.js';
import { UsersService } from './users.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([UserEntity])],
  providers: [UsersService, PasswordCheckGate],
  exports: [UsersService, PasswordCheckGate],
})
export class UsersModule {}
