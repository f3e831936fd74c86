import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { NotifiedIdSet } from '../database/notified-id-set.js';
import { PgListenerService } from '../database/pg-listener.service.js';
import { AuthorizationCodeIssuerService, STATE_APPROVED_CHANNEL } from '../codes/authorization-code-issuer.service.js';

/**
 * Which states have a code waiting for their polling device, known on every instance, so the
 * common poll (nobody has signed in yet) costs no database round trip. The database stays the
 * only judge of a pick-up.
 */
@Injectable()
export class ApprovedStatesService implements OnApplicationShutdown {
  private readonly approved: NotifiedIdSet;

  constructor(listener: PgListenerService, codes: AuthorizationCodeIssuerService) {
    this.approved = new NotifiedIdSet(listener, STATE_APPROVED_CHANNEL, async () =>
      (await codes.awaitingPickUp()).map(({ stateId, expiresAt }) => ({ id: stateId, expiresAt })),
    );
  }

  /** An approval made here: known at once, before its notification comes back. */
  add(stateId: string, expiresAt: number): void {
    this.approved.add(stateId, expiresAt);
  }

  /** False only when the state surely has no code waiting; true means "ask the database". */
  mayHaveCode(stateId: string): boolean {
    return !this.approved.isComplete || this.approved.has(stateId);
  }

  /** The code was collected. */
  forget(stateId: string): void {
    this.approved.delete(stateId);
  }

  onApplicationShutdown(): void {
    this.approved.stop();
  }
}
