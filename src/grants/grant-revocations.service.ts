import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { afterCommit } from '../database/after-commit.js';
import { notifiedIdPayloadSql } from '../database/notified-id-set.js';
import type { RevokedGrant } from './grant.js';
import { GRANT_REVOKED_CHANNEL, REVOKED_UNTIL_SQL, RevokedGrants } from './revoked-grants.js';

/** Which grants end: one (a replayed code, a reused or revoked refresh token, a provider's refusal), or a sign-out's (sign-outs.repository.ts). */
export type GrantSelection = { grantId: string } | { userId: string; clientId?: string } | { clientId: string };

/**
 * The one path by which a grant is revoked, whoever decides it: it writes `revoked_at`, NOTIFYs
 * every instance (both only if the revoking transaction commits), and tells this instance's
 * mirror (RevokedGrants) once it has, so a caller cannot forget to, nor tell it of a revocation
 * that rolled back. The rule every revocation follows is in revocations.ts.
 */
@Injectable()
export class GrantRevocationsService {
  constructor(private readonly revokedGrants: RevokedGrants) {}

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
    if (told.length > 0) afterCommit(manager, () => told.forEach((grant) => this.revokedGrants.add(grant)));
    return told;
  }
}
