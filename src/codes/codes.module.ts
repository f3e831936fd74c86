import { Module } from '@nestjs/common';
import { HousekeepingModule } from '../database/housekeeping.module.js';
import { AuthorizationCodeIssuerService } from './authorization-code-issuer.service.js';
import { AuthorizationCodesRepository } from './authorization-codes.repository.js';
import { CodeRetentionService } from './code-retention.service.js';
import { DeviceCodesRepository } from './device-codes.repository.js';

/**
 * The short-lived credentials a sign-in passes through before it becomes a grant: authorizations
 * waiting for a device to collect them, authorization codes, device codes. Each is spent once, by
 * the statement that issues its grant through grants/' inserts; a sign-out voids the unspent.
 */
@Module({
  imports: [HousekeepingModule],
  providers: [AuthorizationCodeIssuerService, AuthorizationCodesRepository, CodeRetentionService, DeviceCodesRepository],
  exports: [AuthorizationCodeIssuerService, AuthorizationCodesRepository, DeviceCodesRepository],
})
export class CodesModule {}
