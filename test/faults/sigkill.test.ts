import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectDeliveryGuarantee } from './expectations.js';
import { currentScale } from './scale.js';
import { SUBSCRIBER_KINDS } from './stream-kinds.js';
import { sleep, waitUntil, World } from './world.js';

/**
 * Scenario 1: one of two instances is killed (SIGKILL: no shutdown, streams and requests cut) in
 * the middle of the publishes, while subscribers are spread over both, a mix of v1, v2 and SSE
 * clients. Publishers retry on the other instance, subscribers reconnect there (v2 and SSE
 * resuming from what they processed); afterwards the killed instance is started again.
 */
describe(`fault: SIGKILL of one instance (${currentScale().name})`, () => {
  let world: World;

  beforeAll(async () => {
    world = await World.create({ recipients: currentScale().recipients, placement: 'spread', kinds: SUBSCRIBER_KINDS });
  }, 300_000);

  afterAll(async () => {
    await world?.destroy();
  }, 120_000);

  it('delivers every accepted notification to v1, v2 and SSE subscribers, in order, and serves on from the survivor', async () => {
    const [victim, survivor] = world.instances;
    expect(world.connectedTo(victim)).toBeGreaterThan(0);

    const run = world.beginRun();
    await sleep(run.plannedMs * 0.4);
    const killedAt = Date.now();
    await victim.stop('SIGKILL');

    // Every subscriber of the victim finds its way to the survivor.
    const everyone = world.subscribers.length;
    const reconnectBound = world.scale.reconnectDelayMs + world.scale.reconnectJitterMs + 30_000;
    await waitUntil(() => world.connectedTo(survivor) === everyone, reconnectBound, 'every subscriber to reconnect to the survivor');
    // The fault lasts while the victim's clients move over.
    const fault = { start: killedAt, end: Date.now() };

    await sleep(run.plannedMs * 0.3);
    const restartAt = Date.now();
    await victim.start(); // on the same port
    const restartMs = Date.now() - restartAt;

    const report = await world.finishRun('sigkill-one-instance', run, fault, {
      'all subscribers on the survivor after': `${((fault.end - fault.start) / 1000).toFixed(1)} s`,
      'restart of the killed instance until /health 200': `${(restartMs / 1000).toFixed(1)} s`,
    });
    expectDeliveryGuarantee(report);
    expect.soft(report.recoveryMs, 'publish, token and /health on the survivor work again').toBeDefined();
  }, 600_000);
});
