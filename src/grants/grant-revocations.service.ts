import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { USER_ACCESS_TOKEN_TTL } from '../config/env.js';
import { afterCommit } from '../database/after-commit.js';
import { notifiedIdPayloadSql } from '../database/notified-id-set.js';
import type { RevokedGrant } from './grant.js';

/** NOTIFY channel announcing a revoked grant (a NotifiedIdSet of grant ids). */
export const GRANT_REVOKED_CHANNEL = 'vc_grant_revoked';

/** Until when a revoked grant matters: its last access token expires an access-token lifetime after the revocation. */
export const REVOKED_UNTIL_SQL = `revoked_at + interval '${USER_ACCESS_TOKEN_TTL} seconds'`;

/** Which grants end: one (a replayed code, a reused or revoked refresh token, a provider's refusal, an operator's GrantsService.revokeOne), or a sign-out's (sign-outs.repository.ts). */
export type GrantSelection = { grantId: string } | { userId: string; clientId?: string } | { clientId: string };

/**
 * The one path by which a grant is revoked, whoever decides it: it writes `revoked_at`, NOTIFYs
 * every instance (both only if the revoking transaction commits), and tells this instance's
 * mirror (RevokedGrantsService, which listens here) once it has, so a caller cannot forget to, nor tell
 * it of a revocation that rolled back. A process without the mirror (the CLI) is told nothing:
 * the servers hear of its revocations by the NOTIFY. The rule every revocation follows is in
 * revocations.ts.
 */
@Injectable()
export class GrantRevocationsService {
  private readonly committed: ((grant: RevokedGrant) => void)[] = [];

  /** Tells `listener` of each grant this process revoked, once the revoking transaction committed. */
  onCommitted(listener: (grant: RevokedGrant) => void): void {
    this.committed.push(listener);
  }

  /** Revokes the live grants `which` names, in the caller's transaction; returns those this revoked (not those revoked before). */
  async revoke(manager: EntityManager, which: GrantSelection): Promise<RevokedGrant[]> {
    const [where, params] =
      'grantId' in which
        ? ['id = $1', [which.grantId]]
        : ['($1::uuid IS NULL OR user_id = $1) AND ($2::text IS NULL OR client_id = $2)', ['userId' in which ? which.userId : null, which.clientId ?? null]];
    const revoked: RevokedGrant[] = await manager.query(
      `WITH revoked AS (UPDATE grants SET revoked_at = now() WHERE revoked_at IS NULL AND ${where} RETURNING id, ${REVOKED_UNTIL_SQL} AS until)
       SELECT id, until, pg_notify('${GRANT_REVOKED_CHANNEL}', ${notifiedIdPayloadSql('id::text', 'until')}) FROM revoked`,
      params,
    );
    const told = revoked.map(({ id, until }) => ({ id, until }));
    if (told.length > 0 && this.committed.length > 0) {
      afterCommit(manager, () => {
        for (const grant of told) for (const listener of this.committed) listener(grant);
      });
    }
    return told;
  }
}
