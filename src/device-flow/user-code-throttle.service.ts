import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { addressPrefix } from '../common/http/address-prefix.js';
import { NEXT_FAILURES_SQL, slowDownDelaySql } from '../common/slow-down-sql.js';

/**
 * Wrong user codes an address may enter within the 15-minute window before each further one
 * doubles the wait. A user who mistypes a few times never notices; a guesser gets a handful of tries out of
 * 20^8 codes (RFC 8628 §5.1) before each one costs seconds, then minutes.
 */
const FREE_FAILURES = 10;

/** The address's key in login_failures: hashed, so its length is fixed. */
const KEY_SQL = `(SELECT 'user_code:' || encode(sha256(convert_to($1::text, 'UTF8')), 'hex'))`;

/**
 * Slows down the entry of wrong user codes on the verification page, per address (IPv6 by its
 * /64), in PostgreSQL so every instance counts alike. Each entry is counted before its code is
 * looked up and given back when the code was right, so parallel guesses cannot outrun the count.
 */
@Injectable()
export class UserCodeThrottleService {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Counts an entry from `address`: 0 when it may go ahead, else the seconds it must wait (nothing counted). */
  async reserve(address: string): Promise<number> {
    const [row]: { counted: boolean; wait: string | null }[] = await this.dataSource.query(
      `WITH counted AS (
         INSERT INTO login_failures AS f (key, failures, last_failure_at, blocked_until) VALUES (${KEY_SQL}, 1, now(), now())
         ON CONFLICT (key) DO UPDATE SET failures = ${NEXT_FAILURES_SQL}, last_failure_at = now(), blocked_until = now() + ${slowDownDelaySql(NEXT_FAILURES_SQL, FREE_FAILURES)}
         -- clock_timestamp(): an entry that waited on the row may have started before the one it waited for.
         WHERE f.blocked_until <= clock_timestamp()
         RETURNING key)
       SELECT EXISTS (SELECT 1 FROM counted) AS counted,
         (SELECT ceil(extract(epoch FROM blocked_until - now())) FROM login_failures WHERE key = ${KEY_SQL}) AS wait`,
      [addressPrefix(address)],
    );
    return row.counted ? 0 : Math.max(1, Number(row.wait ?? 1));
  }

  /** The entry was a right code: it no longer counts. */
  async forgive(address: string): Promise<void> {
    await this.dataSource.query(`UPDATE login_failures SET failures = failures - 1 WHERE key = ${KEY_SQL} AND failures > 0`, [addressPrefix(address)]);
  }
}
