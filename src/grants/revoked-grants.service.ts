import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { USER_ACCESS_TOKEN_TTL } from '../config/env.js';
import { NotifiedIdSet } from '../database/notified-id-set.js';
import { PgListenerService } from '../database/pg-listener.service.js';
import type { RevokedGrant } from './grant.js';
import { GRANT_REVOKED_CHANNEL, GrantRevocationsService, REVOKED_UNTIL_SQL } from './grant-revocations.service.js';

/**
 * The grants revoked recently enough that access tokens of theirs may still be alive, mirrored in
 * memory on every server instance: each bearer check, stream upgrade and publish asks it. It
 * learns of a revocation from the revoke path (GrantRevocationsService) when the revoking
 * transaction commits on this instance, and from the NOTIFY on the others (revocations.ts, rules
 * 2 and 3). Only the server has it (RevokedGrantsModule): the CLI neither listens nor reads the set.
 */
@Injectable()
export class RevokedGrantsService implements OnApplicationShutdown {
  private readonly grants: NotifiedIdSet;
  private readonly listeners: ((grantId: string) => void)[] = [];

  constructor(@InjectDataSource() dataSource: DataSource, listener: PgListenerService, revocations: GrantRevocationsService) {
    this.grants = new NotifiedIdSet(
      listener,
      GRANT_REVOKED_CHANNEL,
      async () => {
        const rows: RevokedGrant[] = await dataSource.query(`SELECT id, ${REVOKED_UNTIL_SQL} AS until FROM grants WHERE revoked_at > now() - interval '${USER_ACCESS_TOKEN_TTL} seconds'`);
        return rows.map((grant) => ({ id: grant.id, expiresAt: grant.until }));
      },
      (grantId) => {
        for (const told of this.listeners) told(grantId);
      },
    );
    revocations.onCommitted((grant) => this.add(grant));
  }

  onApplicationShutdown(): void {
    this.grants.stop();
  }

  /** False until the set was read after the listener's last (re)connection: ask PostgreSQL meanwhile. */
  get isComplete(): boolean {
    return this.grants.isComplete;
  }

  has(grantId: string): boolean {
    return this.grants.has(grantId);
  }

  /** Tells `listener` of each grant revoked on any instance, once (and of those whose notice was lost, once re-read). */
  onRevoked(listener: (grantId: string) => void): void {
    this.listeners.push(listener);
  }

  /** A grant this instance revoked, once its transaction committed: refused here at once, before the NOTIFY echo. */
  add(grant: RevokedGrant): void {
    this.grants.add(grant.id, grant.until.getTime());
  }
}
