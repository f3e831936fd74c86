import { Injectable, type OnModuleInit } from '@nestjs/common';
import { Env } from '../config/env.js';
import { HousekeepingService } from '../database/housekeeping.service.js';
import { AuditEventsRepository } from './audit-events.repository.js';

/** AUDIT_RETENTION is enforced: older events are deleted with the other expired rows, in batches. */
@Injectable()
export class AuditRetentionService implements OnModuleInit {
  constructor(
    private readonly housekeeping: HousekeepingService,
    private readonly events: AuditEventsRepository,
    private readonly env: Env,
  ) {}

  onModuleInit() {
    this.housekeeping.register((limit) => this.events.purgeOlderThan(this.env.AUDIT_RETENTION, limit));
  }
}
