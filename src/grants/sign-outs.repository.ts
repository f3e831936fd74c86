import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { AuditTrailService } from '../audit/audit-trail.service.js';
import { GrantRevocationsService } from './grant-revocations.service.js';
import { NEW_STAMP_SQL } from './revocations.js';

/** Whose sign-ins end: a user's (on every client, or on one), or every user's on one client. */
export type SignOutTarget = { userId: string; clientId?: string } | { clientId: string };

/**
 * Signing out spans the tables a sign-in passes through, so its queries live together here.
 * Runs in the caller's transaction, beside the change that calls for it (a disabled user, a
 * deleted client), so both commit or neither does.
 */
@Injectable()
export class SignOutsRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly revocations: GrantRevocationsService,
    private readonly audit: AuditTrailService,
  ) {}

  /** A user's sign-outs in a transaction of their own, when nothing else changes with them (grants:revoke). */
  async signOutNow(target: { userId: string; clientId?: string }): Promise<number> {
    const revokedGrants = await this.dataSource.transaction(async (manager) => {
      const revoked = await this.signOut(manager, target);
      const [user]: { username: string }[] = await manager.query('SELECT username FROM portal_users WHERE id = $1', [target.userId]);
      await this.audit.record(manager, { action: 'user.signed_out', username: user?.username ?? null, clientId: target.clientId ?? null, details: { revoked_grants: revoked } });
      return revoked;
    });
    this.audit.tellAtCli('user.signed_out', { reason: 'cli', userId: target.userId, clientId: target.clientId ?? null, revokedGrants });
    return revokedGrants;
  }

  /**
   * Revokes the target's live grants through the one revoke path, as a replayed code does (every
   * instance, this one included, hears of each grant when the transaction commits, refuses its
   * tokens and closes its streams), and voids the sign-ins not yet exchanged for a grant:
   * unredeemed codes, approvals a device has not collected, device authorizations not yet
   * exchanged, sign-ins through a provider waiting for the user's "Continue". A user's row is
   * locked first, and a sign-out of all their devices moves their stamp: see revocations.ts for
   * why that settles the race with an issuance under way. Returns how many grants it revoked.
   */
  async signOut(manager: EntityManager, target: SignOutTarget): Promise<number> {
    const userId = 'userId' in target ? target.userId : null;
    const clientId = target.clientId ?? null;
    if (userId !== null && clientId === null) await manager.query(`UPDATE portal_users SET tokens_valid_after = ${NEW_STAMP_SQL} WHERE id = $1`, [userId]);
    else if (userId !== null) await manager.query('SELECT 1 FROM portal_users WHERE id = $1 FOR UPDATE', [userId]);
    const revoked = await this.revocations.revoke(manager, target);
    const matches = `($1::uuid IS NULL OR user_id = $1) AND ($2::text IS NULL OR client_id = $2)`;
    // Void marks, not expiries: "expired" would depend on whose clock reads it, and a purged row
    // would make its state usable again. A consumed code without a grant is refused without revoking anything.
    await manager.query(`UPDATE authorization_codes SET consumed_at = now() WHERE consumed_at IS NULL AND ${matches}`, [userId, clientId]);
    await manager.query(`UPDATE authorizations SET voided_at = now() WHERE picked_up_at IS NULL AND voided_at IS NULL AND ${matches}`, [userId, clientId]);
    await manager.query(
      `UPDATE device_codes SET voided_at = now()
       WHERE consumed_at IS NULL AND voided_at IS NULL AND ($1::uuid IS NULL OR $1 IN (user_id, signed_in_user_id)) AND ($2::text IS NULL OR client_id = $2)`,
      [userId, clientId],
    );
    // Sign-ins through a provider held for "Continue to CLIENT?": the user's, or all of a client's
    // (relayed ones have no user), their relayed tokens erased. One still at the provider has no
    // user yet: its user's stamp, moved above, voids it at the callback (revocations.ts).
    await manager.query(
      `UPDATE upstream_sign_ins SET voided_at = now(), tokens_sealed = NULL
       WHERE confirmation_hash IS NOT NULL AND confirmed_at IS NULL AND voided_at IS NULL AND ($1::uuid IS NULL OR user_id = $1) AND ($2::text IS NULL OR purpose->>'clientId' = $2)`,
      [userId, clientId],
    );
    if (userId === null && clientId !== null) {
      // A client's relayed sign-ins have no user: what waits for it, and what it holds of the provider's, ends too.
      await manager.query('DELETE FROM relay_hand_overs WHERE client_id = $1', [clientId]);
      await manager.query('DELETE FROM relayed_tokens WHERE client_id = $1', [clientId]);
    }
    return revoked.length;
  }
}
