import { Logger } from '@nestjs/common';
import type { PgListenerService } from './pg-listener.service.js';

const PRUNE_MS = 60_000;
const RELOAD_RETRY_MS = 5_000;

export interface ExpiringId {
  id: string;
  expiresAt: Date;
}

/** The NOTIFY payload announcing an id: the id and its expiry in epoch milliseconds. */
export const notifiedIdPayloadSql = (idSql: string, expiresAtSql: string) => `${idSql} || ' ' || floor(extract(epoch FROM ${expiresAtSql}) * 1000)`;

/**
 * A set of ids that expire, mirrored in memory on every instance so a hot path can answer
 * "is it in there?" without a round trip. Whoever adds an id in the database NOTIFYs `channel`
 * (payload: `notifiedIdPayloadSql`), and the set is re-read after every (re)connection of the
 * listener, since notifications sent meanwhile are lost. Until that read has succeeded, or while
 * the listener is down, `isComplete` is false and callers ask the database.
 */
export class NotifiedIdSet {
  private readonly logger: Logger;
  /** Id → when it expires (epoch ms). */
  private readonly expiries = new Map<string, number>();
  private complete = false;
  /** Counts (re)connections, so a read begun before the latest one cannot vouch for it. */
  private connection = 0;
  private readonly pruner = setInterval(() => this.prune(), PRUNE_MS).unref();
  private retry?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly listener: PgListenerService,
    channel: string,
    private readonly load: () => Promise<ExpiringId[]>,
    /** Told of each id the set did not hold yet: by a notification, or by the re-read after a reconnection (a lost notification). */
    private readonly onAdded: (id: string) => void = () => {},
  ) {
    this.logger = new Logger(`NotifiedIdSet(${channel})`);
    listener.on(channel, (payload) => {
      const [id, expiresAt] = payload.split(' ');
      this.add(id, Number(expiresAt));
    });
    listener.onResume(() => {
      this.complete = false;
      void this.reload(++this.connection);
    });
  }

  get isComplete(): boolean {
    return this.complete && this.listener.isListening;
  }

  add(id: string, expiresAt: number): void {
    const known = this.expiries.has(id);
    this.expiries.set(id, expiresAt);
    if (!known && expiresAt > Date.now()) this.onAdded(id);
  }

  has(id: string): boolean {
    const expiresAt = this.expiries.get(id);
    return expiresAt !== undefined && expiresAt > Date.now();
  }

  delete(id: string): void {
    this.expiries.delete(id);
  }

  /** A read still under way when the set stops (its database closing) schedules no retry. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.pruner);
    clearTimeout(this.retry);
  }

  /** Merges rather than replaces: a notification may have arrived while the query ran. */
  private async reload(connection: number): Promise<void> {
    clearTimeout(this.retry);
    try {
      for (const { id, expiresAt } of await this.load()) this.add(id, expiresAt.getTime());
      if (connection === this.connection) this.complete = true;
    } catch (error) {
      if (this.stopped) return;
      this.logger.warn(`could not read the set (${(error as Error).message}); asking the database meanwhile`);
      this.retry = setTimeout(() => void this.reload(connection), RELOAD_RETRY_MS).unref();
    }
  }

  private prune(): void {
    const now = Date.now();
    for (const [id, expiresAt] of this.expiries) if (expiresAt <= now) this.expiries.delete(id);
  }
}
