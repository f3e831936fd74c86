import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptsBetween, describeLongest, expectDeliveryGuarantee, failureCounts, longestWait } from './expectations.js';
import { percentile } from './report.js';
import { type Attempt, latency } from './requests.js';
import { currentScale, LIMITS } from './scale.js';
import { SUBSCRIBER_KINDS } from './stream-kinds.js';
import { sleep, World } from './world.js';

/** The service's per-recipient publish lock: pg_advisory_xact_lock(7042002, hashtext(recipient)). */
const PUBLISH_LOCK_CLASS = 7_042_002;

/**
 * Scenario 4: the test's own connection holds a lock for the lock duration while the load runs:
 * (a) the whole notifications table, (b) one recipient's publish lock. Token requests must not
 * notice; in (b) the other recipients' publishes must not either. Every publish is accepted in the
 * end (retries allowed) and delivered, to v1, v2 and SSE subscribers alike, and no request hangs.
 */
describe(`fault: locks held by another session (${currentScale().name})`, () => {
  let world: World;
  let session: pg.Client | undefined;

  beforeAll(async () => {
    world = await World.create({ recipients: currentScale().recipients, placement: 'spread', kinds: SUBSCRIBER_KINDS });
  }, 300_000);

  afterAll(async () => {
    await session?.end().catch(() => {});
    await world?.destroy();
  }, 120_000);

  /** A session of our own, with a bound on how long it waits for the lock it asks for. */
  async function openSession() {
    session = new pg.Client({ connectionString: world.cluster.databaseUrl, application_name: 'faults-lock-holder' });
    await session.connect();
    await session.query("SET lock_timeout = '20s'");
    return session;
  }

  it('(a) LOCK TABLE notifications IN ACCESS EXCLUSIVE MODE: tokens unaffected, every publish accepted and delivered', async () => {
    const holder = await openSession();
    const run = world.beginRun();
    await sleep(run.plannedMs * 0.2);
    const locking = Date.now();
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE notifications IN ACCESS EXCLUSIVE MODE');
    const locked = Date.now();
    await sleep(world.scale.faultMs);
    await holder.query('ROLLBACK');
    const released = Date.now();
    await holder.end();
    session = undefined;

    const during = attemptsBetween(world.log.attempts, locked, released);
    const tokens = during.filter((attempt) => attempt.route === 'token');
    const report = await world.finishRun('lock-notifications-table', run, { start: locking, end: released }, {
      'lock acquired after': `${locked - locking} ms`,
      'held for': `${((released - locked) / 1000).toFixed(1)} s`,
      'token requests while locked': `${tokens.length}, failures ${JSON.stringify(failureCounts(tokens))}, longest ${longestWait(tokens)} ms`,
      'publishes while locked': describePublishes(during.filter((attempt) => attempt.route === 'publish')),
      'longest request while locked': describeLongest(during, locked),
    });

    expectDeliveryGuarantee(report);
    expect.soft(tokens.length, 'token requests made while the table was locked').toBeGreaterThan(0);
    expect.soft(failureCounts(tokens), 'token failures while the table was locked').toEqual({});
    expect.soft(longestWait(tokens), 'longest token request while locked (ms)').toBeLessThanOrEqual(LIMITS.maxTokenLatencyUnderLockMs);
    expect.soft(longestWait(during), 'longest request while locked (ms)').toBeLessThanOrEqual(LIMITS.maxWaitDuringFaultMs);
  }, 600_000);

  it("(b) one recipient's publish lock: tokens and the other recipients unaffected, every publish accepted and delivered", async () => {
    const holder = await openSession();
    const lockedRecipient = world.recipients[0].id;
    const run = world.beginRun();
    await sleep(run.plannedMs * 0.2);
    const locking = Date.now();
    await holder.query('SELECT pg_advisory_lock($1, hashtext($2))', [PUBLISH_LOCK_CLASS, lockedRecipient]);
    const locked = Date.now();
    await sleep(world.scale.faultMs);
    await holder.query('SELECT pg_advisory_unlock($1, hashtext($2))', [PUBLISH_LOCK_CLASS, lockedRecipient]);
    const released = Date.now();
    await holder.end();
    session = undefined;

    const during = attemptsBetween(world.log.attempts, locked, released);
    const tokens = during.filter((attempt) => attempt.route === 'token');
    const loadPublishes = during.filter((attempt) => attempt.route === 'publish' && attempt.source === 'publisher');
    const others = loadPublishes.filter((attempt) => attempt.recipient !== lockedRecipient);
    const ofLocked = loadPublishes.filter((attempt) => attempt.recipient === lockedRecipient);

    const report = await world.finishRun('lock-one-recipient', run, { start: locking, end: released }, {
      'held for': `${((released - locked) / 1000).toFixed(1)} s`,
      'token requests while locked': `${tokens.length}, failures ${JSON.stringify(failureCounts(tokens))}, longest ${longestWait(tokens)} ms`,
      'publishes to other recipients while locked': `${describePublishes(others)}, p95 ${percentile(others.map(latency), 0.95)} ms`,
      'publishes to the locked recipient while locked': describePublishes(ofLocked),
      'longest request while locked': describeLongest(during, locked),
    });

    expectDeliveryGuarantee(report);
    expect.soft(failureCounts(tokens), 'token failures while the lock was held').toEqual({});
    expect.soft(longestWait(tokens), 'longest token request while locked (ms)').toBeLessThanOrEqual(LIMITS.maxTokenLatencyUnderLockMs);
    expect.soft(others.length, 'publishes to other recipients while locked').toBeGreaterThan(0);
    expect.soft(failureCounts(others), 'failed publishes to other recipients while locked').toEqual({});
    expect.soft(percentile(others.map(latency), 0.95), 'p95 publish latency of other recipients while locked (ms)').toBeLessThanOrEqual(LIMITS.otherRecipientsP95Ms);
    expect.soft(longestWait(during), 'longest request while locked (ms)').toBeLessThanOrEqual(LIMITS.maxWaitDuringFaultMs);
  }, 600_000);
});

/** "412 requests: 300 × 202, 112 × 503; longest 2.0 s" */
function describePublishes(attempts: Attempt[]): string {
  const counts = new Map<string, number>();
  for (const attempt of attempts) counts.set(String(attempt.outcome), (counts.get(String(attempt.outcome)) ?? 0) + 1);
  return `${attempts.length} requests: ${[...counts].map(([outcome, count]) => `${count} × ${outcome}`).join(', ')}; longest ${(longestWait(attempts) / 1000).toFixed(1)} s`;
}
