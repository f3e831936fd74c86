import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';

/** Failures counted per key before slowing down: usernames are targeted, addresses may be shared. */
const FREE_FAILURES = { user: 5, address: 20 } as const;
/** Failures older than this no longer count. */
const WINDOW_SECONDS = 15 * 60;
const MAX_DELAY_SECONDS = 15 * 60;

export interface ThrottleKeys {
  user: string;
  address: string;
}

/**
 * Slows failed logins down per username and per address, in PostgreSQL so every instance
 * counts the same failures: after the free failures, each further one doubles the wait.
 */
@Injectable()
export class LoginThrottle {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Seconds to wait before this attempt may be checked; 0 lets it go ahead and counts it as a
   * failure already. Taking the check and the count together, one attempt per key at a time
   * across instances, keeps parallel attempts from all passing the check before any failure
   * is counted. A successful attempt gives its count back through recordSuccess.
   */
  reserveAttempt(keys: ThrottleKeys): Promise<number> {
    return this.dataSource.transaction(async (manager) => {
      // Transaction-scoped locks, taken in one order everywhere so no two attempts deadlock.
      for (const key of keyList(keys).sort()) await manager.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [key]);
      const wait = await this.waitSeconds(keys, manager);
      if (wait === 0) await this.recordFailure(keys, manager);
      return wait;
    });
  }

  /** Seconds to wait before the next attempt may be checked (0: go ahead). */
  async waitSeconds(keys: ThrottleKeys, manager: EntityManager = this.dataSource.manager): Promise<number> {
    const rows: { key: string; failures: number; last_failure_at: Date }[] = await manager.query(
      `SELECT key, failures, last_failure_at FROM login_failures
       WHERE key = ANY($1) AND last_failure_at > now() - make_interval(secs => $2)`,
      [keyList(keys), WINDOW_SECONDS],
    );
    const now = Date.now();
    return Math.max(
      0,
      ...rows.map((row) => {
        const free = row.key.startsWith('user:') ? FREE_FAILURES.user : FREE_FAILURES.address;
        const delay = row.failures < free ? 0 : Math.min(2 ** (row.failures - free), MAX_DELAY_SECONDS);
        return Math.ceil((row.last_failure_at.getTime() + delay * 1000 - now) / 1000);
      }),
    );
  }

  async recordFailure(keys: ThrottleKeys, manager: EntityManager = this.dataSource.manager): Promise<void> {
    await manager.query(
      `INSERT INTO login_failures AS f (key, failures, last_failure_at)
       SELECT unnest($1::text[]), 1, now()
       ON CONFLICT (key) DO UPDATE SET
         failures = CASE WHEN f.last_failure_at > now() - make_interval(secs => $2) THEN f.failures + 1 ELSE 1 END,
         last_failure_at = now()`,
      [keyList(keys), WINDOW_SECONDS],
    );
  }

  /** A successful login clears its username's count and gives back the failure reserveAttempt counted for its address. */
  async recordSuccess(keys: ThrottleKeys): Promise<void> {
    const [user, address] = keyList(keys);
    await this.dataSource.query('DELETE FROM login_failures WHERE key = $1', [user]);
    await this.dataSource.query('UPDATE login_failures SET failures = failures - 1 WHERE key = $1 AND failures > 0', [address]);
  }
}

const keyList = (keys: ThrottleKeys) => [`user:${keys.user.toLowerCase()}`, `address:${keys.address}`];
