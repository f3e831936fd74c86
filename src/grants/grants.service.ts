import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { isUUID } from 'class-validator';
import { DataSource, type EntityManager } from 'typeorm';
import { AuditTrailService } from '../audit/audit-trail.service.js';
import { notFound } from '../common/errors/app-error.js';
import type { GrantFlow } from './grant.js';
import { GrantRevocationsService } from './grant-revocations.service.js';
import { GrantsRepository, type LiveGrant } from './grants.repository.js';

/** A user's signed-in device as operators see it (grants:list, the admin API): never a token or a hash. */
export interface GrantView {
  grant_id: string;
  client_id: string;
  client_name: string;
  scope: string | null;
  flow: GrantFlow;
  created_at: string;
  /** The requester's address when the grant was made; null for grants made before addresses were kept. */
  created_address: string | null;
  last_refreshed_at: string | null;
  /** The address of the last refresh; null when never refreshed (or last refreshed before addresses were kept). */
  last_refreshed_address: string | null;
  /** When the grant lapses unless refreshed; null without a refresh token. */
  expires_at: string | null;
}

/** One grant revoked by its id: whose it was, and whether this revoked it (0: revoked before). */
export interface RevokedGrantView {
  user_id: string;
  username: string;
  client_id: string;
  grant_id: string;
  revoked_grants: number;
}

/** Whose grants a lookup is confined to: the user a caller named. */
export interface GrantOwner {
  id: string;
  username: string;
}

/** The grants of a user as operators see and end them, one by one; every revocation goes through GrantRevocationsService. */
@Injectable()
export class GrantsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly grants: GrantsRepository,
    private readonly revocations: GrantRevocationsService,
    private readonly audit: AuditTrailService,
  ) {}

  /** A user's live grants (their signed-in devices), oldest first. */
  async liveOfUser(userId: string): Promise<GrantView[]> {
    return (await this.grants.liveOfUser(userId)).map(toView);
  }

  /**
   * Revokes one grant (signs one device out), in the caller's transaction: its tokens are refused
   * and its streams closed on every instance once the transaction commits (GrantRevocationsService).
   * With `owner`, the grant must be that user's. not_found for a malformed or unknown id, or
   * another user's grant, and nothing changes; a grant revoked before is found, and
   * `revoked_grants` is 0. Recorded in the audit trail as the current actor's. Whatever else the caller writes in `manager` commits with it or not at all.
   */
  async revokeOne(manager: EntityManager, grantId: string, owner?: GrantOwner): Promise<RevokedGrantView> {
    // Not a UUID: no grant has it, and PostgreSQL would refuse the statement.
    if (!isUUID(grantId, 'all')) throw notFound(`no grant with id ${JSON.stringify(grantId)}: a grant id is a UUID, as grants:list shows it`);
    const grant = await this.grants.lockById(manager, grantId);
    if (!grant) throw notFound(`no grant with id "${grantId}"`);
    if (owner && grant.user_id !== owner.id) throw notFound(`user "${owner.username}" has no grant with id "${grantId}"`);
    const revoked = grant.revoked_at ? [] : await this.revocations.revoke(manager, { grantId: grant.id });
    await this.audit.record(manager, { action: 'user.signed_out', username: grant.username, clientId: grant.client_id, target: grant.id, details: { revoked_grants: revoked.length } });
    return { user_id: grant.user_id, username: grant.username, client_id: grant.client_id, grant_id: grant.id, revoked_grants: revoked.length };
  }

  /** revokeOne in a transaction of its own, for an operator at the CLI (grants:revoke --grant); the security event follows the commit. */
  async revokeOneNow(grantId: string, owner?: GrantOwner): Promise<RevokedGrantView> {
    const revoked = await this.dataSource.transaction((manager) => this.revokeOne(manager, grantId, owner));
    this.audit.tellAtCli('user.signed_out', { reason: 'cli', userId: revoked.user_id, clientId: revoked.client_id, grantId: revoked.grant_id, revokedGrants: revoked.revoked_grants });
    return revoked;
  }
}

/** The one mapping from a row to what an operator sees. */
function toView(grant: LiveGrant): GrantView {
  return {
    grant_id: grant.grant_id,
    client_id: grant.client_id,
    client_name: grant.client_name,
    scope: grant.scope,
    flow: grant.flow,
    created_at: grant.created_at.toISOString(),
    created_address: grant.created_address,
    last_refreshed_at: grant.last_refreshed_at?.toISOString() ?? null,
    last_refreshed_address: grant.last_refreshed_address,
    expires_at: grant.expires_at?.toISOString() ?? null,
  };
}
