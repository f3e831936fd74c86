import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { PgListener } from '../database/pg-listener.service.js';
import { AuthorizationCodeIssuer, STATE_APPROVED_CHANNEL } from '../token/authorization-code-issuer.js';

const PRUNE_MS = 60_000;
const RELOAD_RETRY_MS = 5_000;

/**
 * Which states have a code waiting for their polling device, known in memory on every instance,
 * so the common poll (nobody has signed in yet) costs no database round trip. An approval
 * NOTIFYs every instance when it commits, and the list is re-read after every (re)connection of
 * the listener. Until that read succeeds, or while the listener is down, every poll asks the
 * database, which stays the only judge of a pick-up.
 */
@Injectable()
export class ApprovedStates implements OnApplicationShutdown {
  private readonly logger = new Logger(ApprovedStates.name);
  /** State id → when the state expires (epoch ms). */
  private readonly expiries = new Map<string, number>();
  /** Whether `expiries` holds every approval since the listener last connected. */
  private complete = false;
  /** Counts (re)connections, so a read begun before the latest one cannot vouch for it. */
  private connection = 0;
  private readonly pruner = setInterval(() => this.prune(), PRUNE_MS).unref();
  private retry?: NodeJS.Timeout;

  constructor(
    private readonly listener: PgListener,
    private readonly codes: AuthorizationCodeIssuer,
  ) {
    listener.on(STATE_APPROVED_CHANNEL, (payload) => {
      const [stateId, expiresAt] = payload.split(' ');
      this.add(stateId, Number(expiresAt));
    });
    listener.onResume(() => {
      this.complete = false;
      void this.reload(++this.connection);
    });
  }

  add(stateId: string, expiresAt: number): void {
    this.expiries.set(stateId, expiresAt);
  }

  /** False only when the state surely has no code waiting; true means "ask the database". */
  mayHaveCode(stateId: string): boolean {
    if (!this.complete || !this.listener.isListening) return true;
    const expiresAt = this.expiries.get(stateId);
    return expiresAt !== undefined && expiresAt > Date.now();
  }

  /** The code was collected (here or elsewhere), or the state can no longer yield one. */
  forget(stateId: string): void {
    this.expiries.delete(stateId);
  }

  onApplicationShutdown(): void {
    clearInterval(this.pruner);
    clearTimeout(this.retry);
  }

  /** Merges rather than replaces: a notification may have arrived while the query ran. */
  private async reload(connection: number): Promise<void> {
    clearTimeout(this.retry);
    try {
      for (const { stateId, expiresAt } of await this.codes.awaitingPickUp()) this.add(stateId, expiresAt.getTime());
      if (connection === this.connection) this.complete = true;
    } catch (error) {
      this.logger.warn(`could not read the approved states (${(error as Error).message}); polls ask the database meanwhile`);
      this.retry = setTimeout(() => void this.reload(connection), RELOAD_RETRY_MS).unref();
    }
  }

  private prune(): void {
    const now = Date.now();
    for (const [stateId, expiresAt] of this.expiries) if (expiresAt <= now) this.expiries.delete(stateId);
  }
}
