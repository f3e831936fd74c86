import { Module } from '@nestjs/common';
import { HousekeepingModule } from '../database/housekeeping.module.js';
import { AuditEventsRepository } from './audit-events.repository.js';
import { AuditRetentionService } from './audit-retention.service.js';

/** What a running service instance adds to the audit trail: the purge after AUDIT_RETENTION. Only AppModule imports it. */
@Module({
  imports: [HousekeepingModule],
  providers: [AuditEventsRepository, AuditRetentionService],
})
export class AuditInstanceModule {}
