import { Module } from '@nestjs/common';
import { AuditEventsRepository } from './audit-events.repository.js';
import { AuditTrailService } from './audit-trail.service.js';

/** The audit trail of administrative changes: every module that makes one imports it. */
@Module({
  providers: [AuditEventsRepository, AuditTrailService],
  exports: [AuditTrailService],
})
export class AuditModule {}
