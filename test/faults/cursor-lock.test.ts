import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silences } from './checker.js';
import { expectDeliveryGuarantee } from './expectations.js';
import { currentScale } from './scale.js';
import { sleep, waitUntil, World } from './world.js';

/** The start's own deadline on these instances: REQUEST_TIMEOUT_MS. */
const START_DEADLINE_MS = 2_000;
/** A stream may lag this much behind a 202 (delivery under load), on top of the start's deadline. */
const DELIVERY_SLACK_MS = 1_000;
/** What was stored just before a stream opened may have been confirmed by the client's other stream: it is not due on the new one. */
const OPENING_MARGIN_MS = 1_000;
/** Close codes clients of the notification service answer by reconnecting and resuming from their cursor. */
const RECONNECT_CODES = [1001, 1013];

/**
 * Scenario 6: the test's own session holds `LOCK TABLE delivery_cursors` for the fault duration
 * while the load runs, and meanwhile every subscriber client opens a second stream (on the other
 * instance), whose start must read its cursor. The instances' database timeouts outlast the lock,
 * so only the start's own deadline (REQUEST_TIMEOUT_MS) can end the wait. Each such stream either
 * starts and gets everything published to its client from then on, or is closed with a code the
 * clients reconnect on: no stream stays open and silent. Every publish is accepted and delivered.
 */
describe(`fault: delivery cursors locked while streams start (${currentScale().name})`, () => {
  const scale = currentScale();
  let world: World;
  let holder: pg.Client | undefined;

  beforeAll(async () => {
    const waits = String(2 * scale.faultMs + 10_000);
    world = await World.create({
      // Few clients at the fast scale: registering each runs the CLI, which costs seconds.
      recipients: scale.name === 'fast' ? 6 : scale.recipients,
      placement: 'spread',
      env: { REQUEST_TIMEOUT_MS: String(START_DEADLINE_MS), DATABASE_LOCK_TIMEOUT_MS: waits, DATABASE_STATEMENT_TIMEOUT_MS: waits },
    });
  }, 300_000);

  afterAll(async () => {
    await holder?.end().catch(() => {});
    await world?.destroy();
  }, 120_000);

  it('starts every stream opened under the lock, or closes it to reconnect; none stays open and silent', async () => {
    holder = new pg.Client({ connectionString: world.cluster.databaseUrl, application_name: 'faults-lock-holder' });
    await holder.connect();
    await holder.query("SET lock_timeout = '20s'");
    // The load outlasts the lock and the reconnects after it, so the second streams have live notifications to get.
    const loadMs = 1_000 + scale.faultMs + scale.reconnectDelayMs + scale.reconnectJitterMs + 3_000;
    const run = world.beginRun({ count: Math.round((loadMs / 1000) * scale.publishesPerSecond) });
    await sleep(1_000);
    const locking = Date.now();
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE delivery_cursors IN ACCESS EXCLUSIVE MODE');
    const locked = Date.now();
    const seconds = world.addStreams(world.recipients);
    await sleep(scale.faultMs);
    await holder.query('ROLLBACK');
    const released = Date.now();
    await holder.end();
    holder = undefined;

    await waitUntil(() => seconds.every((subscriber) => subscriber.openOn !== undefined), scale.reconnectDelayMs + scale.reconnectJitterMs + 30_000, 'every second stream to be open');
    const report = await world.finishRun('lock-delivery-cursors', run, { start: locking, end: released }, {
      'held for': `${((released - locked) / 1000).toFixed(1)} s`,
      'second streams opened under the lock': seconds.length,
      'their close codes': closeCodes(seconds),
      'close codes of the first streams': closeCodes(world.subscribers.filter((subscriber) => !seconds.includes(subscriber))),
    });
    const publications = [...run.publisher.publications, ...run.probes.publications];
    const longest = silences(world.subscribers, publications, world.mailbox, OPENING_MARGIN_MS).slice(0, 3);
    console.log(`longest silences (202 to arrival or close): ${JSON.stringify(longest)}`);

    expectDeliveryGuarantee(report);
    expect.soft(longest[0]?.ms ?? 0, 'longest a stream stayed open without a notification accepted for its client (ms)').toBeLessThanOrEqual(START_DEADLINE_MS + DELIVERY_SLACK_MS);
    const closes = world.subscribers.flatMap((subscriber) => subscriber.closes);
    expect.soft(closes.filter((close) => !RECONNECT_CODES.includes(close.code)), 'closes with a code other than 1001 or 1013').toEqual([]);
    expect.soft(seconds.filter((subscriber) => subscriber.opens.some((open) => open.at >= locked && open.at < released)).length, 'second streams opened while locked').toBe(seconds.length);
  }, 600_000);
});

/** {"1013": 12} */
function closeCodes(subscribers: { closes: { code: number }[] }[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { code } of subscribers.flatMap((subscriber) => subscriber.closes)) counts[code] = (counts[code] ?? 0) + 1;
  return counts;
}
