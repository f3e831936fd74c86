import { performance } from 'node:perf_hooks';
import { Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PREVIOUS_RELEASE_LISTENER } from '../../database/pg-listener.service.js';
import { PREVIOUS_RELEASE_CHANNEL } from './wake-ups.js';

/** How often PostgreSQL is asked. */
const CHECK_MS = 1_000;

/**
 * Whether an instance of the previous release is listening on this database, as during a rolling
 * upgrade (or a rollback): its listening connection is named PREVIOUS_RELEASE_LISTENER, and it
 * reads only the per-recipient wake-up, so publishes send that one too until it is gone. Until
 * PostgreSQL has answered once, and while it does not answer, one is taken to be there.
 *
 * A check's "none" is sure only of the moment it was asked: a listener of that release that
 * starts or reconnects after it reads what was committed before it listened, but would miss a
 * wake-up sent without its form before the next check sees it. So the recipients of publishes
 * that committed with this release's wake-up alone are kept until a check that began after their
 * commit finds no such listener; a check that finds one wakes them again in its form (a wake-up
 * that finds nothing new costs one read). What is kept is at most the recipients of two checks'
 * worth of publishes.
 */
@Injectable()
export class PreviousReleaseListenersService implements OnModuleInit, OnApplicationShutdown {
  private listening = true;
  private timer?: NodeJS.Timeout;
  private checking = false;
  /** Recipients woken without the previous release's form, oldest commit first, with when it committed (performance.now()). */
  private readonly unsure = new Map<string, number>();

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Whether a publish sends the previous release's wake-up too. */
  get present(): boolean {
    return this.listening;
  }

  /** A publish that sent this release's wake-up alone (`present` was false) committed, for these recipients. */
  committedWithoutItsForm(recipients: Iterable<string>): void {
    // A listener was found while the transaction ran: it is woken now.
    if (this.listening) return void this.wakeAgain([...recipients]);
    const now = performance.now();
    for (const recipient of recipients) {
      this.unsure.delete(recipient);
      this.unsure.set(recipient, now);
    }
  }

  onModuleInit() {
    void this.check();
    this.timer = setInterval(() => void this.check(), CHECK_MS).unref();
  }

  onApplicationShutdown() {
    clearInterval(this.timer);
  }

  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    const askedAt = performance.now();
    try {
      const [{ present }]: { present: boolean }[] = await this.dataSource.query(
        `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1) AS present`,
        [PREVIOUS_RELEASE_LISTENER],
      );
      this.listening = present;
      if (present) await this.wakeAgain(this.takeUnsure());
      else this.forgetCommittedBefore(askedAt);
    } catch {
      // Not known: both forms from now on; what is kept waits for an answer.
      this.listening = true;
    } finally {
      this.checking = false;
    }
  }

  /** A listener that was not there when this was asked read everything committed before it. */
  private forgetCommittedBefore(askedAt: number): void {
    for (const [recipient, committedAt] of this.unsure) {
      if (committedAt >= askedAt) break;
      this.unsure.delete(recipient);
    }
  }

  private takeUnsure(): string[] {
    const recipients = [...this.unsure.keys()];
    this.unsure.clear();
    return recipients;
  }

  /** The previous release's wake-up for each recipient; kept for the next check if it could not be sent. */
  private async wakeAgain(recipients: string[]): Promise<void> {
    if (recipients.length === 0) return;
    try {
      await this.dataSource.query(`SELECT pg_notify($1, recipient) FROM unnest($2::text[]) AS r (recipient)`, [PREVIOUS_RELEASE_CHANNEL, recipients]);
    } catch {
      const now = performance.now();
      for (const recipient of recipients) if (!this.unsure.has(recipient)) this.unsure.set(recipient, now);
    }
  }
}
