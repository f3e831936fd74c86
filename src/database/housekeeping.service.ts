import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Env } from '../config/env.js';

/** Any constant: one instance purges per round; the others skip it. */
const PURGE_LOCK_KEY = 7_042_003;
const BATCH = 5_000;

/** Deletes up to `limit` expired rows of one kind; returns how many it deleted. */
export type Purge = (limit: number) => Promise<number>;

/**
 * When in a round a purge runs: every `expired` purge first (rows past their own life), then the
 * `unreferenced` ones (rows kept only while another row refers to them, which the first stage may
 * have set free). Within a stage, purges run in the order they were registered.
 */
export type PurgeStage = 'expired' | 'unreferenced';

/**
 * One purge's statement, run with the batch size as `$1`: delete by `ctid IN (SELECT ctid … LIMIT $1)`
 * (or `id IN (…)`) so each batch commits on its own and holds its locks briefly.
 */
export const purgeStatement =
  (dataSource: DataSource, sql: string): Purge =>
  async (limit) => {
    const [, deleted] = (await dataSource.query(sql, [limit])) as [unknown, number];
    return deleted;
  };

/**
 * The housekeeping scheduler: every HOUSEKEEPING_INTERVAL seconds, one instance (an advisory lock)
 * runs the purges the tables' owners registered, each in batches until nothing expired is left.
 * It knows no table: what expires, and when, is each owner's rule (a consumed code, say, is kept
 * until it expires, so a replay inside its lifetime is still recognised as one).
 */
@Injectable()
export class HousekeepingService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(HousekeepingService.name);
  private readonly purges: Record<PurgeStage, Purge[]> = { expired: [], unreferenced: [] };
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly env: Env,
  ) {}

  /** An owner's expired rows, purged in every round (the owner's repository knows how). */
  register(purge: Purge, stage: PurgeStage = 'expired'): void {
    this.purges[stage].push(purge);
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

  /** One round: every registered purge until nothing expired is left (or another instance holds the lock). */
  async purge(): Promise<number> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    try {
      const [{ locked }] = await runner.query('SELECT pg_try_advisory_lock($1) AS locked', [PURGE_LOCK_KEY]);
      if (!locked) return 0;
      let deleted = 0;
      try {
        // Each batch commits on its own: a purge never holds locks for long.
        for (const purge of [...this.purges.expired, ...this.purges.unreferenced]) {
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
