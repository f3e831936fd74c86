import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { type SecurityEvent, type SecurityEventFields, SecurityEvents } from '../common/logging/security-events.js';
import { afterCommit } from '../database/after-commit.js';
import { currentActor } from './actor.js';
import type { AdminChange } from './admin-change.js';
import { type AuditEventFilter, AuditEventsRepository, type AuditEventView } from './audit-events.repository.js';

/**
 * The audit trail: every administrative change, from the CLI, the admin API or a registration, is
 * recorded by the service that makes it, in the change's own transaction (both commit or neither
 * does), as the current actor's (actor.ts). One made through HTTP is also told as a security event
 * (`admin.*`, `client.registered`) on the service's log once it has committed; one made at the CLI
 * by its own `reason: cli` event (tellAtCli) on the CLI's stderr.
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

  /**
   * A change's `reason: cli` security event, written when an operator made it at the CLI (on its
   * stderr); through HTTP the change is told as `admin.*` by record() instead, so it is told once.
   */
  tellAtCli<E extends SecurityEvent>(event: E, fields: SecurityEventFields[E]): void {
    if (currentActor().kind === 'operator') this.securityEvents.emit(event, fields);
  }

  list(filter: AuditEventFilter): Promise<AuditEventView[]> {
    return this.events.list(filter);
  }
}
