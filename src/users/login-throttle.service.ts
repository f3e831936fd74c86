import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditTrailService } from '../audit/audit-trail.service.js';
import { addressPrefix } from '../common/http/address-prefix.js';
import { NEXT_FAILURES_SQL, slowDownDelaySql } from '../common/slow-down-sql.js';

/**
 * Failures allowed per key within the window before each further one doubles the wait. The
 * pair (username, address) is what one guesser controls, so it is tight; the username alone has
 * a much higher ceiling (OWASP's authentication cheat sheet, Keycloak's brute-force detector), so
 * a stranger who knows a username cannot keep its owner locked out from one address, while a
 * guesser spread over many addresses is still slowed down; an address alone may be a shared NAT.
 */
const FREE_FAILURES = { pair: 5, user: 50, address: 100 } as const;

/**
 * The keys of an attempt, made in SQL so the username is folded by PostgreSQL's own `lower()`,
 * exactly as the user lookup folds it (JavaScript's toLowerCase differs for some characters),
 * and hashed, so a key has a fixed length however long the username (a 3,000-character one
 * would not fit a btree index entry). The pair key starts with the username's hash, so every
 * slow-down of one user can be found and cleared.
 */
const KEYS_SQL = `
  hashed AS (SELECT encode(sha256(convert_to(lower($1::text), 'UTF8')), 'hex') AS u, encode(sha256(convert_to($2::text, 'UTF8')), 'hex') AS a),
  keys (key, free) AS (
    SELECT 'pair:' || u || ':' || a, ${FREE_FAILURES.pair} FROM hashed
    UNION ALL SELECT 'user:' || u, ${FREE_FAILURES.user} FROM hashed
    UNION ALL SELECT 'address:' || a, ${FREE_FAILURES.address} FROM hashed)`;

export interface ThrottleKeys {
  username: string;
  address: string;
}

/**
 * Slows failed logins down, in PostgreSQL so every instance counts the same failures and one
 * clock (the database's) decides. Rows are compared with clock_timestamp(), not now(): now() is
 * when a statement's transaction began, and a parallel attempt that began a moment later may have
 * committed before this statement read its row, leaving a blocked_until (its own now(), within
 * the allowance) that lies after this statement's now() though it has already passed. Reading whether an attempt must wait takes no lock; counting
 * it is one conditional upsert, so parallel attempts cannot all pass and no attempt holds a
 * pooled connection while it waits for another.
 */
@Injectable()
export class LoginThrottleService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly audit: AuditTrailService,
  ) {}

  /** Seconds before an attempt with these keys may be checked; 0: go ahead (then `reserve` it). */
  async waitSeconds(keys: ThrottleKeys): Promise<number> {
    const [row]: { wait: string | null }[] = await this.dataSource.query(
      `WITH ${KEYS_SQL}
       SELECT ceil(extract(epoch FROM max(f.blocked_until) - clock_timestamp())) AS wait
       FROM login_failures f JOIN keys USING (key) WHERE f.blocked_until > clock_timestamp()`,
      [keys.username, addressPrefix(keys.address)],
    );
    return Math.max(0, Number(row?.wait ?? 0));
  }

  /**
   * Counts the attempt as a failure before its password is checked (a success gives it back):
   * true when every key was open and took it. A key that a parallel attempt has just closed
   * refuses it, so of many simultaneous attempts only those the keys allow go ahead.
   */
  async reserve(keys: ThrottleKeys): Promise<boolean> {
    const rows = await this.dataSource.query(
      `WITH ${KEYS_SQL},
       open AS (SELECT NOT EXISTS (SELECT 1 FROM login_failures f JOIN keys USING (key) WHERE f.blocked_until > clock_timestamp()) AS ok)
       INSERT INTO login_failures AS f (key, failures, last_failure_at, blocked_until)
       SELECT key, 1, now(), now() + ${slowDownDelaySql('1', 'free')} FROM keys, open WHERE open.ok
       ON CONFLICT (key) DO UPDATE SET
         failures = ${NEXT_FAILURES_SQL},
         last_failure_at = now(),
         blocked_until = now() + ${slowDownDelaySql(NEXT_FAILURES_SQL, '(SELECT free FROM keys WHERE keys.key = f.key)')}
       WHERE f.blocked_until <= clock_timestamp()
       RETURNING key`,
      [keys.username, addressPrefix(keys.address)],
    );
    return rows.length === 3;
  }

  /** A successful login: its username's and its pair's failures are forgotten, its address gets back the one `reserve` counted. */
  async recordSuccess(keys: ThrottleKeys): Promise<void> {
    await this.dataSource.query(
      `WITH ${KEYS_SQL},
       cleared AS (DELETE FROM login_failures WHERE key IN (SELECT key FROM keys WHERE free <> ${FREE_FAILURES.address}))
       UPDATE login_failures SET failures = failures - 1 WHERE key IN (SELECT key FROM keys WHERE free = ${FREE_FAILURES.address}) AND failures > 0`,
      [keys.username, addressPrefix(keys.address)],
    );
  }

  /** Forgets every slow-down of a username, from every address (an operator's unlock). */
  async clearUser(username: string): Promise<number> {
    const deleted = await this.dataSource.transaction(async (manager) => {
      const [, count]: [unknown, number] = await manager.query(
        `WITH hashed AS (SELECT encode(sha256(convert_to(lower($1::text), 'UTF8')), 'hex') AS u)
         DELETE FROM login_failures WHERE key = (SELECT 'user:' || u FROM hashed) OR starts_with(key, (SELECT 'pair:' || u || ':' FROM hashed))`,
        [username],
      );
      await this.audit.record(manager, { action: 'user.unlocked', username, details: { cleared_slow_downs: count } });
      return count;
    });
    this.audit.tellAtCli('user.unlocked', { reason: 'cli', username, clearedSlowDowns: deleted });
    return deleted;
  }

  /**
   * Slow-downs with no failure for a day, every key's (login_failures holds the user codes'
   * too: their throttle writes by this table's rule). Up to `limit` rows; returns how many were
   * deleted (a housekeeping purge).
   */
  async purgeExpired(limit: number): Promise<number> {
    const [, deleted]: [unknown, number] = await this.dataSource.query(
      `DELETE FROM login_failures WHERE ctid IN (SELECT ctid FROM login_failures WHERE last_failure_at < now() - interval '1 day' LIMIT $1)`,
      [limit],
    );
    return deleted;
  }
}
