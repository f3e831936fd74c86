import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Env } from '../config/env.js';

/** Any constant: one instance purges per round; the others skip it. */
const PURGE_LOCK_KEY = 7_042_003;
const BATCH = 5_000;

/**
 * Deletes expired rows in small batches (short locks, no long transaction) every
 * HOUSEKEEPING_INTERVAL seconds. Consumed codes are kept until they expire, so a replay inside
 * their lifetime is still recognised as one.
 */
const PURGES = [
  `DELETE FROM authorizations WHERE ctid IN (SELECT ctid FROM authorizations WHERE expires_at < now() LIMIT ${BATCH})`,
  `DELETE FROM authorization_codes WHERE ctid IN (SELECT ctid FROM authorization_codes WHERE expires_at < now() LIMIT ${BATCH})`,
  `DELETE FROM revoked_access_tokens WHERE ctid IN (SELECT ctid FROM revoked_access_tokens WHERE expires_at < now() LIMIT ${BATCH})`,
  `DELETE FROM login_failures WHERE last_failure_at < now() - interval '1 day'`,
  // Signing in through identity providers: round trips never finished, hand-overs never collected
  // (or collected: their sealed answer is already erased, and like a consumed code the row is kept
  // until the code expires; its relayed tokens live on, unlinked), relayed tokens past their life,
  // and upstream sessions no sign-in or grant refers to any more.
  `DELETE FROM upstream_sign_ins WHERE ctid IN (SELECT ctid FROM upstream_sign_ins WHERE expires_at < now() LIMIT ${BATCH})`,
  `DELETE FROM relay_hand_overs WHERE ctid IN (SELECT ctid FROM relay_hand_overs WHERE expires_at < now() LIMIT ${BATCH})`,
  `DELETE FROM relayed_tokens WHERE ctid IN (SELECT ctid FROM relayed_tokens WHERE expires_at < now() LIMIT ${BATCH})`,
  // Browser sessions past SESSION_TTL (an ended one is kept until then), before the upstream sessions they refer to.
  `DELETE FROM browser_sessions WHERE ctid IN (SELECT ctid FROM browser_sessions WHERE expires_at < now() LIMIT ${BATCH})`,
  `DELETE FROM upstream_sessions s WHERE s.id IN (SELECT id FROM upstream_sessions u WHERE u.created_at < now() - interval '1 day'
     AND NOT EXISTS (SELECT 1 FROM grants WHERE upstream_session_id = u.id) AND NOT EXISTS (SELECT 1 FROM authorizations WHERE upstream_session_id = u.id)
     AND NOT EXISTS (SELECT 1 FROM browser_sessions WHERE upstream_session_id = u.id)
     AND NOT EXISTS (SELECT 1 FROM authorization_codes WHERE upstream_session_id = u.id) AND NOT EXISTS (SELECT 1 FROM device_codes WHERE upstream_session_id = u.id)
     LIMIT ${BATCH})`,
];

/** Deletes up to `limit` expired rows of one kind; returns how many it deleted. */
export type Purge = (limit: number) => Promise<number>;

@Injectable()
export class HousekeepingService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(HousekeepingService.name);
  private readonly purges: Purge[] = [];
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly env: Env,
  ) {}

  /** Another feature's expired rows, purged in the same rounds (the feature's repository knows how). */
  register(purge: Purge): void {
    this.purges.push(purge);
  }

  onApplicationBootstrap() {
    this.timer = setInterval(() => {
      this.running ??= this.purge()
        .catch((error) => this.logger.warn(`purge failed: ${(error as Error).message}`))
        .finally(() => (this.running = undefined));
    }, this.env.HOUSEKEEPING_INTERVAL * 1000).unref();
  }

  async onApplicationShutdown() {
    clearInterval(this.timer);
    await this.running;
  }

  /** One round: every table until nothing expired is left (or another instance holds the lock). */
  async purge(): Promise<number> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    try {
      const [{ locked }] = await runner.query('SELECT pg_try_advisory_lock($1) AS locked', [PURGE_LOCK_KEY]);
      if (!locked) return 0;
      let deleted = 0;
      try {
        // Each batch commits on its own: a purge never holds locks for long.
        for (const sql of PURGES) {
          for (let count = BATCH; count >= BATCH; deleted += count) [, count] = await runner.query(sql);
        }
        for (const purge of this.purges) {
          for (let count = BATCH; count >= BATCH; deleted += count) count = await purge(BATCH);
        }
      } finally {
        await runner.query('SELECT pg_advisory_unlock($1)', [PURGE_LOCK_KEY]);
      }
      return deleted;
    } finally {
      await runner.release();
    }
  }
}
