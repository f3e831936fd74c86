import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { SecurityEvents } from '../common/logging/security-events.js';
import { afterCommit } from '../database/after-commit.js';
import { currentActor } from './actor.js';
import type { AdminChange } from './admin-change.js';
import { type AuditEventFilter, AuditEventsRepository, type AuditEventView } from './audit-events.repository.js';

/**
 * The audit trail: every administrative change, from the CLI, the admin API or a registration, is
 * recorded by the service that makes it, in the change's own transaction (both commit or neither
 * does), as the current actor's (actor.ts). One made through HTTP is also told as a security event
 * on the service's log once it has committed; the CLI's keep their own events on its stderr.
 */
@Injectable()
export class AuditTrailService {
  constructor(
    private readonly events: AuditEventsRepository,
    private readonly securityEvents: SecurityEvents,
  ) {}

  async record(manager: EntityManager, change: AdminChange): Promise<void> {
    const actor = currentActor();
    await this.events.insert(manager, actor, change);
    if (actor.kind !== 'client') return;
    afterCommit(manager, () =>
      this.securityEvents.emitAdminChange(
        change.action === 'client.registered' ? 'client.registered' : `admin.${change.action}`,
        {
          reason: change.action === 'client.registered' ? 'registration' : 'admin_api',
          clientId: actor.clientId,
          action: change.action,
          subjectClientId: change.clientId ?? null,
          username: change.username ?? null,
          target: change.target ?? null,
          details: change.details ?? {},
        },
        actor.requester,
      ),
    );
  }

  list(filter: AuditEventFilter): Promise<AuditEventView[]> {
    return this.events.list(filter);
  }
}
