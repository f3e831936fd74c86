/**
 * What each index of `notifications` costs a publish (issue 26), PostgreSQL alone: a fresh
 * embedded cluster with pg_stat_statements, pinned to CPU 0; the service's own publish
 * transaction (NotificationsRepository.insertBatch) driven from this process, one batch at a
 * time, each of --batch notifications to as many recipients, on a table pre-filled with
 * --prefill rows. The schema variants take turns round by round (each round in another order):
 *   all        the indexes as migrated: seq (primary key), id (unique), the dedupe key,
 *              (recipient, seq), and expires_at;
 *   no-id      without the unique index on id;
 *   brin       expires_at as a BRIN index instead of a B-tree;
 *   no-id+brin both.
 * Per variant: the INSERT's execution time per row (pg_stat_statements), the whole transaction's
 * time per row as this process sees it, WAL bytes per row, and one EXPLAIN (ANALYZE, BUFFERS)
 * of the INSERT with a real batch (auto_explain inside publish_insert), rolled back. Prints one JSON document.
 *
 *   npx tsx bench/load/notification-indexes.ts [--prefill 200000] [--batch 500] [--batches 60] [--rounds 3]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type pg from 'pg';
import { DataSource } from 'typeorm';
import { Env } from '../../src/config/env.js';
import { dataSourceOptions, runMigrations } from '../../src/database/data-source.js';
import { type NewNotification, NotificationsRepository, publishInsertParameters } from '../../src/notification/publish/notifications.repository.js';
import type { PreviousReleaseListenersService } from '../../src/notification/publish/previous-release-listeners.service.js';
import { FLEET_SERVER_SETTINGS, startBareDatabase } from '../lib/pg-cluster.js';
import { median, round } from '../lib/ws-common.js';

const { values: opt } = parseArgs({
  options: {
    prefill: { type: 'string', default: '200000' },
    batch: { type: 'string', default: '500' },
    batches: { type: 'string', default: '60' },
    rounds: { type: 'string', default: '3' },
  },
});
const PREFILL = Number(opt.prefill);
const BATCH = Number(opt.batch);
const BATCHES = Number(opt.batches);
const ROUNDS = Number(opt.rounds);

/** A payload of the seed's shape and size (about 450 bytes of JSON). */
const PAYLOAD = JSON.stringify({
  correlationId: '3f1e2d4c-5b6a-4789-9abc-000000000000',
  status: 'COMPLETED',
  routeCalculationScheduleId: '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
  reportType: 'VOYAGE_PLAN',
  vesselImo: '9876543',
  voyageId: 'voyage-2026-11-26-0001',
  createdAt: '2026-11-26T10:00:00.000Z',
  downloadUrl: 'https://portal.example.com/reports/3f1e2d4c-5b6a-4789-9abc-000000000000/download?format=pdf&version=1',
  message: 'Your voyage plan report is ready for download from the portal.',
});

type VariantName = 'all' | 'no-id' | 'brin' | 'no-id+brin';
const VARIANTS: VariantName[] = ['all', 'no-id', 'brin', 'no-id+brin'];

async function main() {
  const database = await startBareDatabase(FLEET_SERVER_SETTINGS);
  const dataSource = await new DataSource(await dataSourceOptions(database.url, 4)).initialize();
  try {
    await runMigrations(dataSource);
    await dataSource.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const recipients = Array.from({ length: BATCH }, (_, index) => `recipient-${String(index).padStart(4, '0')}`);
    await dataSource.query(`INSERT INTO clients (id, name, grants, secret_hash) SELECT r, r, '{}', '\\x00' FROM unnest($1::text[]) AS r`, [recipients]);
    await dataSource.query(
      `INSERT INTO notifications (recipient, correlation_id, status, payload, expires_at, created_at)
       SELECT ($1::text[])[1 + i % $2], gen_random_uuid(), 'COMPLETED', $3, now() + interval '7 days' - make_interval(secs => ($4 - i) * 0.5), now() - make_interval(secs => ($4 - i) * 0.5)
       FROM generate_series(1, $4) AS i`,
      [recipients, recipients.length, PAYLOAD, PREFILL],
    );
    await dataSource.query('VACUUM ANALYZE notifications');
    const env = Object.assign(new Env(), { DATABASE_LOCK_TIMEOUT_MS: 5_000 });
    const repository = new NotificationsRepository(dataSource, env, { present: false, committedWithoutItsForm: () => {} } as unknown as PreviousReleaseListenersService);
    const batch = (): NewNotification[] =>
      recipients.map((recipient) => ({ recipient, correlationId: randomUUID(), status: 'COMPLETED', payload: PAYLOAD, publishedBy: 'bench', retentionSeconds: 7 * 86_400 }));
    for (let warm = 0; warm < 5; warm++) await repository.insertBatch(batch());

    const samples: Record<VariantName, { insert_us_per_row: number; transaction_us_per_row: number; wal_bytes_per_row: number }[]> = { all: [], 'no-id': [], brin: [], 'no-id+brin': [] };
    for (let round_ = 0; round_ < ROUNDS; round_++) {
      const order = VARIANTS.map((_, index) => VARIANTS[(index + round_) % VARIANTS.length]);
      for (const variant of order) {
        await applyVariant(dataSource, variant);
        await dataSource.query('CHECKPOINT');
        await dataSource.query('SELECT pg_stat_statements_reset()');
        const started = performance.now();
        for (let index = 0; index < BATCHES; index++) await repository.insertBatch(batch());
        const elapsedUs = (performance.now() - started) * 1000;
        const [row] = await dataSource.query(
          `SELECT sum(total_exec_time) AS ms, sum(rows) AS rows, sum(wal_bytes) AS wal FROM pg_stat_statements WHERE query LIKE '%INSERT INTO notifications%' AND query NOT LIKE '%pg_stat_statements%'`,
        );
        const rows = BATCHES * BATCH;
        samples[variant].push({
          insert_us_per_row: round((Number(row.ms) * 1000) / rows, 2)!,
          transaction_us_per_row: round(elapsedUs / rows, 2)!,
          wal_bytes_per_row: round(Number(row.wal) / rows, 0)!,
        });
        console.error(`round ${round_ + 1} ${variant}: ${JSON.stringify(samples[variant].at(-1))}`);
      }
    }
    const explains: Record<string, string> = {};
    for (const variant of VARIANTS) {
      await applyVariant(dataSource, variant);
      explains[variant] = await explainInsert(dataSource, batch());
    }
    const [{ size }] = await dataSource.query(`SELECT json_object_agg(indexrelname, pg_relation_size(indexrelid)) AS size FROM pg_stat_user_indexes WHERE relname = 'notifications'`);
    const summary = Object.fromEntries(
      VARIANTS.map((variant) => {
        const pick = (key: 'insert_us_per_row' | 'transaction_us_per_row' | 'wal_bytes_per_row') => median(samples[variant].map((sample) => sample[key]));
        return [variant, { insert_us_per_row: pick('insert_us_per_row'), transaction_us_per_row: pick('transaction_us_per_row'), wal_bytes_per_row: pick('wal_bytes_per_row'), samples: samples[variant] }];
      }),
    );
    console.log(JSON.stringify({ settings: { prefill: PREFILL, batch: BATCH, batches: BATCHES, rounds: ROUNDS }, summary, index_bytes_last_variant: size, explains }, null, 2));
  } finally {
    await dataSource.destroy();
    await database.stop();
  }
}

/** Drops or adds the two indexes in question so the table matches `variant`. */
async function applyVariant(dataSource: DataSource, variant: VariantName): Promise<void> {
  await dataSource.query('ALTER TABLE notifications DROP CONSTRAINT IF EXISTS notifications_id_key');
  if (!variant.startsWith('no-id')) await dataSource.query('ALTER TABLE notifications ADD CONSTRAINT notifications_id_key UNIQUE (id)');
  await dataSource.query('DROP INDEX IF EXISTS notifications_expires_at_idx');
  await dataSource.query(`CREATE INDEX notifications_expires_at_idx ON notifications USING ${variant.endsWith('brin') ? 'brin' : 'btree'} (expires_at)`);
  await dataSource.query('VACUUM ANALYZE notifications');
}

/**
 * EXPLAIN (ANALYZE, BUFFERS, WAL) of the publish INSERT as the service runs it, rolled back: the
 * statement is inside the publish_insert function, so auto_explain reports its plan as a notice.
 */
async function explainInsert(dataSource: DataSource, notifications: NewNotification[]): Promise<string> {
  const runner = dataSource.createQueryRunner();
  const connection = (await runner.connect()) as pg.PoolClient;
  const plans: string[] = [];
  const onNotice = (notice: { message?: string }) => void (notice.message?.includes('INSERT INTO notifications') && plans.push(notice.message));
  connection.on('notice', onNotice);
  try {
    await runner.startTransaction();
    await runner.query(`LOAD 'auto_explain'`);
    for (const setting of ['log_min_duration = 0', 'log_analyze = on', 'log_buffers = on', 'log_wal = on', 'log_nested_statements = on', 'log_level = notice']) {
      await runner.query(`SET LOCAL auto_explain.${setting}`);
    }
    await runner.query('SELECT * FROM publish_insert($1, $2, $3, $4, $5, $6, $7, $8)', publishInsertParameters(notifications));
    return plans.join('\n');
  } finally {
    connection.off('notice', onNotice);
    await runner.rollbackTransaction().catch(() => {});
    await runner.release();
  }
}

await main();
