/**
 * Where a fleet's PostgreSQL spends its time during a measured window (scenario 8), read by the
 * load generator at the window's edges so it covers exactly the window:
 *  - CPU of every process under the postmaster, from /proc, grouped by pg_stat_activity's
 *    application_name ('voyage-connect' = the pools, 'voyage-connect-listener-2' = the LISTEN
 *    connections) or, for server processes, its backend_type;
 *  - pg_stat_statements (reset at the start) grouped into the publish transaction's statements and
 *    the delivery reads its wake-ups cause;
 *  - wait events of the pools' active backends, sampled.
 */
import pg from 'pg';
import { childrenOf, cpuSeconds, now, round } from './ws-common.js';

/** Statement groups, by the SQL of src/notification/publish/notifications.repository.ts and src/notification/delivery/delivery.repository.ts; first match wins. */
const STATEMENT_GROUPS: [string, RegExp][] = [
  ['publish: pg_notify (queues the NOTIFY; the queue work is at commit)', /pg_notify\(/],
  ['publish: INSERT INTO notifications', /INSERT INTO notifications/],
  ['publish: recipient advisory locks', /pg_(try_)?advisory_xact_lock/],
  ['publish: duplicate lookup', /JOIN notifications s USING/],
  ['transaction control (BEGIN/COMMIT; the commit itself is not timed)', /^\s*(START TRANSACTION|BEGIN|COMMIT|ROLLBACK)\b/i],
  ['delivery: reads after wake-ups (LATERAL)', /CROSS JOIN LATERAL/],
  ['delivery: cursor saves', /INSERT INTO delivery_cursors/],
  ['delivery: connection starts', /WITH asked AS/],
];
const BENCH_APP = 'bench-pg-stats';
const WAIT_SAMPLE_MS = 100;

export const PG_STATS_METHOD = [
  'cpu_by_application: utime+stime from /proc/<pid>/stat of the postmaster and its children over the window, each pid labelled by pg_stat_activity.application_name read at the end of the window (backend_type when empty); a backend that exited during the window is missed.',
  'statements: pg_stat_statements (track=top, track_utility=on) reset at the window start and read at its end; total_exec_time is wall time in execution (planning not tracked), so lock waits count in it (the recipient advisory lock waits of publish transactions do). For COMMIT it excludes the commit itself (WAL flush, the NOTIFY queue lock and queue write happen in CommitTransactionCommand after the statement hooks), so NOTIFY cost shows in CPU and wait events, not here.',
  `waits: pg_stat_activity of active client backends sampled every ${WAIT_SAMPLE_MS} ms from the load generator; counts of samples per application and wait event ('running' = no wait event).`,
].join(' ');

export class PgStats {
  private readonly db: pg.Client;
  private startTicks = new Map<number, number>();
  private startedAt = 0;
  private readonly waits: Record<string, Record<string, number>> = {};
  private sampler?: NodeJS.Timeout;
  private sampling = false;

  constructor(
    url: string,
    private readonly postmaster: number,
  ) {
    this.db = new pg.Client({ connectionString: url, application_name: BENCH_APP });
  }

  connect = () => this.db.connect();

  /** The window starts: CPU baselines, statements reset, wait sampling on. */
  async begin(): Promise<void> {
    this.startedAt = now();
    this.startTicks = this.cpuByPid();
    await this.db.query('SELECT pg_stat_statements_reset()');
    this.sampler = setInterval(() => void this.sampleWaits(), WAIT_SAMPLE_MS);
  }

  /** The window ends: what each group used meanwhile. */
  async end() {
    clearInterval(this.sampler);
    const seconds = (now() - this.startedAt) / 1000;
    const endTicks = this.cpuByPid();
    const { rows: activity } = await this.db.query<{ pid: number; name: string }>(
      `SELECT pid, coalesce(nullif(application_name, ''), backend_type) AS name FROM pg_stat_activity`,
    );
    const names = new Map(activity.map((row) => [row.pid, row.name]));
    const cpu: Record<string, { processes: number; cpu_pct_of_core: number }> = {};
    let total = 0;
    for (const [pid, ticks] of endTicks) {
      const used = ticks - (this.startTicks.get(pid) ?? 0);
      const name = pid === this.postmaster ? 'postmaster' : (names.get(pid) ?? 'exited or unknown');
      cpu[name] ??= { processes: 0, cpu_pct_of_core: 0 };
      cpu[name].processes++;
      cpu[name].cpu_pct_of_core += (used / seconds) * 100;
      total += (used / seconds) * 100;
    }
    for (const entry of Object.values(cpu)) entry.cpu_pct_of_core = round(entry.cpu_pct_of_core, 1)!;
    return { window_s: round(seconds, 2), pg_cpu_pct_of_core: round(total, 1), cpu_by_application: cpu, statements: await this.statements(), waits: this.waits };
  }

  async close() {
    clearInterval(this.sampler);
    await this.db.end().catch(() => {});
  }

  private cpuByPid(): Map<number, number> {
    const ticks = new Map<number, number>();
    for (const pid of [this.postmaster, ...childrenOf(this.postmaster)]) {
      const seconds = cpuSeconds(pid);
      if (Number.isFinite(seconds)) ticks.set(pid, seconds);
    }
    return ticks;
  }

  /** Exec time per group, and the two shares the scenario is about. */
  private async statements() {
    const { rows } = await this.db.query<{ query: string; calls: string; total_exec_time: number; rows: string }>(
      `SELECT query, calls, total_exec_time, rows FROM pg_stat_statements
       WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
         AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_stat_activity%'`,
    );
    const groups: Record<string, { calls: number; rows: number; total_exec_ms: number; share_pct?: number }> = {};
    const others: { query: string; total_exec_ms: number }[] = [];
    let total = 0;
    for (const row of rows) {
      const name = STATEMENT_GROUPS.find(([, pattern]) => pattern.test(row.query))?.[0] ?? 'other';
      groups[name] ??= { calls: 0, rows: 0, total_exec_ms: 0 };
      groups[name].calls += Number(row.calls);
      groups[name].rows += Number(row.rows);
      groups[name].total_exec_ms += row.total_exec_time;
      total += row.total_exec_time;
      if (name === 'other') others.push({ query: row.query.replace(/\s+/g, ' ').slice(0, 120), total_exec_ms: round(row.total_exec_time, 1)! });
    }
    const share = (prefix: string) => round((Object.entries(groups).filter(([name]) => name.startsWith(prefix)).reduce((sum, [, g]) => sum + g.total_exec_ms, 0) / (total || 1)) * 100, 1);
    for (const group of Object.values(groups)) {
      group.share_pct = round((group.total_exec_ms / (total || 1)) * 100, 1)!;
      group.total_exec_ms = round(group.total_exec_ms, 1)!;
    }
    // The wake-up statement runs once in each publish transaction that stored something, one row per NOTIFY it queues.
    const wakes = groups[STATEMENT_GROUPS[0][0]];
    return {
      total_exec_ms: round(total, 1),
      publish_transactions_notifying: wakes?.calls ?? 0,
      notifies_per_transaction: wakes?.calls ? round(wakes.rows / wakes.calls, 2) : null,
      publish_share_pct: share('publish:'),
      delivery_reads_share_pct: share('delivery: reads'),
      transaction_control_share_pct: share('transaction control'),
      groups,
      top_other: others.sort((a, b) => b.total_exec_ms - a.total_exec_ms).slice(0, 5),
    };
  }

  private async sampleWaits() {
    if (this.sampling) return;
    this.sampling = true;
    try {
      const { rows } = await this.db.query<{ name: string; wait: string }>(
        `SELECT application_name AS name, coalesce(wait_event_type || ':' || wait_event, 'running') AS wait FROM pg_stat_activity
         WHERE backend_type = 'client backend' AND state = 'active' AND application_name <> $1`,
        [BENCH_APP],
      );
      for (const { name, wait } of rows) {
        this.waits[name] ??= {};
        this.waits[name][wait] = (this.waits[name][wait] ?? 0) + 1;
      }
    } catch {
      // a sample lost is no result lost
    } finally {
      this.sampling = false;
    }
  }
}
