import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { Env } from '../../../src/config/env.js';
import { dataSourceOptions, runMigrations } from '../../../src/database/data-source.js';
import { databaseUnavailableReason } from '../../../src/common/errors/database-unavailable.js';
import { type InsertOutcome, type NewNotification, NotificationsRepository } from '../../../src/notification/publish/notifications.repository.js';
import type { PreviousReleaseListenersService } from '../../../src/notification/publish/previous-release-listeners.service.js';
import { createTestDatabase, query } from '../../setup/database.js';

/** The service's per-recipient publish lock: pg_advisory_xact_lock(7042002, hashtext(recipient)). */
const PUBLISH_LOCK_CLASS = 7_042_002;
const LIMITS = { connectTimeoutMs: 5_000, statementTimeoutMs: 5_000, lockTimeoutMs: 2_000 };
const RECIPIENTS = Array.from({ length: 30 }, (_, index) => `recipient-${String(index).padStart(2, '0')}`);

/** Publishing on a real PostgreSQL, with two repositories on pools of their own, as two instances of the service. */
describe('NotificationsRepository.insertBatch', () => {
  let url: string;
  const dataSources: DataSource[] = [];
  let instances: NotificationsRepository[];

  beforeAll(async () => {
    url = await createTestDatabase();
    const env = Object.assign(new Env(), { DATABASE_LOCK_TIMEOUT_MS: LIMITS.lockTimeoutMs });
    for (let index = 0; index < 2; index++) dataSources.push(await new DataSource(await dataSourceOptions(url, 6, LIMITS)).initialize());
    await runMigrations(dataSources[0]);
    // A fleet of this release only: one wake-up per transaction.
    const noPreviousRelease = { present: false, committedWithoutItsForm: () => {} } as unknown as PreviousReleaseListenersService;
    instances = dataSources.map((dataSource) => new NotificationsRepository(dataSource, env, noPreviousRelease));
    for (const id of RECIPIENTS) await query(url, `INSERT INTO clients (id, name, grants, secret_hash) VALUES ($1, $1, '{}', '\\x00')`, [id]);
  });
  afterAll(async () => {
    for (const dataSource of dataSources) await dataSource.destroy();
  });

  const notification = (recipient: string): NewNotification => ({
    recipient,
    correlationId: randomUUID(),
    status: 'COMPLETED',
    payload: '{}',
    publishedBy: null,
    retentionSeconds: 3600,
  });
  const stored = (outcomes: InsertOutcome[]) => outcomes.filter((outcome) => 'stored' in outcome && outcome.stored).length;

  it('stores every publish of overlapping batches that two instances write at once, whatever order their recipients come in', async () => {
    // A lock held past the short wait is taken for a stuck one, and its recipient left out as busy;
    // on a loaded machine a queue of eight batches can outlast 200 ms. With a wait longer than
    // PostgreSQL's deadlock_timeout (1 s), a lock order that differed would fail a batch (a deadlock)
    // and one that is the same everywhere leaves no recipient out, however slow the machine.
    for (const instance of instances) instance.sharedLockWaitMs = 10_000;
    onTestFinished(() => {
      for (const instance of instances) instance.sharedLockWaitMs = 200;
    });
    for (let round = 0; round < 10; round++) {
      const batches = Array.from({ length: 8 }, (_, index) => {
        const recipients = index % 2 === 0 ? RECIPIENTS : [...RECIPIENTS].reverse();
        return { instance: instances[index % 2], batch: recipients.map(notification) };
      });
      const outcomes = await Promise.all(batches.map(({ instance, batch }) => instance.insertBatch(batch)));
      // Waiting in one order everywhere: no recipient left out as busy, no deadlock failing a batch.
      expect(outcomes.map(stored)).toEqual(batches.map(() => RECIPIENTS.length));
    }
    const [{ count }] = await query<{ count: string }>(url, 'SELECT count(*) FROM notifications');
    expect(Number(count)).toBe(10 * 8 * RECIPIENTS.length);
  });

  it('answers each publish in its own position, whatever spelling PostgreSQL stores: one uuid in two letter cases is one notification', async () => {
    const [alice, bob] = RECIPIENTS.slice(0, 2);
    const first = notification(alice);
    const upper = { ...first, correlationId: first.correlationId.toUpperCase() };
    const other = notification(bob);
    const outcomes = await instances[0].insertBatch([upper, other, first, notification('no-such-client'), upper]);
    expect(outcomes).toEqual([
      { id: expect.any(String), stored: true },
      { id: expect.any(String), stored: true },
      { id: (outcomes[0] as { id: string }).id, stored: false },
      { unknownRecipient: true },
      { id: (outcomes[0] as { id: string }).id, stored: false },
    ]);
    // A retry, in another transaction and another spelling, is answered the stored ids.
    expect(await instances[1].insertBatch([first, { ...other, correlationId: other.correlationId.toUpperCase() }])).toEqual([
      { id: (outcomes[0] as { id: string }).id, stored: false },
      { id: (outcomes[1] as { id: string }).id, stored: false },
    ]);
    const rows = await query<{ id: string }>(url, 'SELECT id FROM notifications WHERE correlation_id = ANY($1::uuid[]) ORDER BY seq', [[first.correlationId, other.correlationId]]);
    expect(rows.map((row) => row.id)).toEqual([(outcomes[0] as { id: string }).id, (outcomes[1] as { id: string }).id]);
  });

  it("leaves out, after a short wait, only the recipient whose lock another session holds, and keeps that session's lock_timeout", async () => {
    const holder = await dataSources[1].createQueryRunner();
    await holder.connect();
    const [locked, ...free] = RECIPIENTS.slice(0, 4);
    try {
      await holder.query('SELECT pg_advisory_lock($1, hashtext($2))', [PUBLISH_LOCK_CLASS, locked]);
      const started = performance.now();
      const outcomes = await instances[0].insertBatch([locked, ...free].map(notification));
      const elapsedMs = performance.now() - started;
      expect(outcomes[0]).toEqual({ recipientBusy: true });
      expect(stored(outcomes.slice(1))).toBe(free.length);
      // It waited briefly for the lock, then tried again without it: well under the session's lock_timeout.
      expect(elapsedMs).toBeGreaterThanOrEqual(150);
      expect(elapsedMs).toBeLessThan(LIMITS.lockTimeoutMs);
      // A lone recipient still waits up to lock_timeout, the session's own, which the short wait did not change.
      const lone = performance.now();
      await expect(instances[0].insertBatch([notification(locked)])).rejects.toSatisfy((error) => databaseUnavailableReason(error) === 'lock');
      expect(performance.now() - lone).toBeGreaterThanOrEqual(LIMITS.lockTimeoutMs - 100);
    } finally {
      await holder.query('SELECT pg_advisory_unlock_all()');
      await holder.release();
    }
    expect(stored(await instances[0].insertBatch([notification(locked), notification(free[0])]))).toBe(2);
  });

  it("waits for a row another session locks up to lock_timeout once (a shared batch is not tried again), and briefly when asked to", async () => {
    const [recipient, other] = RECIPIENTS.slice(5, 7);
    const first = notification(recipient);
    const [stored] = (await instances[0].insertBatch([first])) as { id: string }[];
    const holder = dataSources[1].createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    const timedOut = (error: unknown) => databaseUnavailableReason(error) === 'lock';
    try {
      // A repeat of the stored row waits for it: an upsert locks the row it conflicts with.
      await holder.query('SELECT 1 FROM notifications WHERE id = $1 FOR UPDATE', [stored.id]);
      const shared = performance.now();
      await expect(instances[0].insertBatch([first, notification(other)])).rejects.toSatisfy(timedOut);
      const sharedMs = performance.now() - shared;
      expect(sharedMs).toBeGreaterThanOrEqual(LIMITS.lockTimeoutMs - 100);
      expect(sharedMs).toBeLessThan(2 * LIMITS.lockTimeoutMs - 100);
      const brief = performance.now();
      await expect(instances[0].insertBatch([first], { briefly: true })).rejects.toSatisfy(timedOut);
      expect(performance.now() - brief).toBeLessThan(LIMITS.lockTimeoutMs / 2);
    } finally {
      await holder.rollbackTransaction();
      await holder.release();
    }
    expect(await instances[0].insertBatch([first], { briefly: true })).toEqual([{ id: stored.id, stored: false }]);
  });
});
