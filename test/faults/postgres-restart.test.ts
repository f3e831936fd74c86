import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StopMode } from './cluster.js';
import { expectDeliveryGuarantee } from './expectations.js';
import { currentScale } from './scale.js';
import { SUBSCRIBER_KINDS } from './stream-kinds.js';
import { sleep, World } from './world.js';

/**
 * Scenario 2: PostgreSQL goes away and comes back in the middle of the publishes, the service
 * processes stay up; the subscribers are a mix of v1, v2 and SSE clients. `fast` is a clean
 * restart (sessions terminated, checkpoint); `immediate` is a crash: the server dies without a
 * checkpoint and recovers from the WAL at the next start.
 */
describe(`fault: PostgreSQL restart and crash (${currentScale().name})`, () => {
  let world: World;

  beforeAll(async () => {
    world = await World.create({ recipients: currentScale().recipients, placement: 'spread', kinds: SUBSCRIBER_KINDS });
  }, 300_000);

  afterAll(async () => {
    await world?.destroy();
  }, 120_000);

  const restartIn = (mode: StopMode, scenario: string) => async () => {
    const run = world.beginRun();
    await sleep(run.plannedMs * 0.4);
    const start = Date.now();
    await world.cluster.restart(mode);
    const fault = { start, end: Date.now() };

    const report = await world.finishRun(scenario, run, fault, {
      [`pg_ctl stop -m ${mode} + start`]: `${((fault.end - fault.start) / 1000).toFixed(1)} s`,
    });
    expectDeliveryGuarantee(report);
    expect.soft(report.recoveryMs, 'publish, token and /health work again').toBeDefined();
  };

  it('restart (-m fast): delivers every accepted notification to v1, v2 and SSE subscribers, in order', restartIn('fast', 'postgres-restart-fast'), 600_000);
  it('crash (-m immediate, then start): delivers every accepted notification to v1, v2 and SSE subscribers, in order', restartIn('immediate', 'postgres-crash-immediate'), 600_000);
});
