import { Injectable } from '@nestjs/common';
import type { GrantFlow } from './grant.js';
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

/** The grants of a user as operators see them. */
@Injectable()
export class GrantsService {
  constructor(private readonly grants: GrantsRepository) {}

  /** A user's live grants (their signed-in devices), oldest first. */
  async liveOfUser(userId: string): Promise<GrantView[]> {
    return (await this.grants.liveOfUser(userId)).map(toView);
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
