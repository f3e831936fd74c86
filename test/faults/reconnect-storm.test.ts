import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectDeliveryGuarantee } from './expectations.js';
import { currentScale } from './scale.js';
import { sleep, waitUntil, World } from './world.js';

/** Share of the streams that must be back for "the storm is over". */
const RECONNECTED_SHARE = 0.99;
/** How often B's memory is read during the storm. */
const RSS_SAMPLE_MS = 250;

/**
 * Scenario 5: every stream is on instance A; A gets SIGTERM (a deploy). Each stream must be closed
 * with 1001 before A exits; the subscribers come back on B after their delay plus jitter, all at
 * about the same moment. Measures how long until 99 % are connected again and B's memory, and
 * checks that the notifications published meanwhile all arrive.
 */
describe(`fault: reconnect storm after SIGTERM (${currentScale().name})`, () => {
  const scale = currentScale();
  let world: World;

  beforeAll(async () => {
    world = await World.create({
      recipients: Math.ceil(scale.stormConnections / scale.stormConnectionsPerClient),
      connectionsPerRecipient: scale.stormConnectionsPerClient,
      placement: 'first',
    });
  }, 600_000);

  afterAll(async () => {
    await world?.destroy();
  }, 120_000);

  it('closes every stream with 1001, reconnects them to B and delivers everything published meanwhile', async () => {
    const [a, b] = world.instances;
    const streams = world.subscribers.length;
    expect(world.connectedTo(a)).toBe(streams);

    const rssSamples: number[] = [];
    const rssBefore = await b.rssKiB();
    const sampler = setInterval(() => void b.rssKiB().then((kib) => kib !== undefined && rssSamples.push(kib)), RSS_SAMPLE_MS);

    try {
      const run = world.beginRun();
      await sleep(run.plannedMs * 0.2);
      const cpuBefore = { b: await b.cpuSeconds(), test: process.cpuUsage() };
      const sigterm = Date.now();
      const exitCode = await a.stop('SIGTERM', 30_000);
      const exitedAfterMs = Date.now() - sigterm;

      const reconnectBound = scale.reconnectDelayMs + scale.reconnectJitterMs + 60_000;
      await waitUntil(() => world.connectedTo(b) >= Math.ceil(streams * RECONNECTED_SHARE), reconnectBound, `${RECONNECTED_SHARE * 100} % of the streams on B`);
      const reconnectedMs = Date.now() - sigterm;
      await waitUntil(() => world.connectedTo(b) === streams, reconnectBound, 'every stream on B');
      const allReconnectedMs = Date.now() - sigterm;
      // Who was busy during the storm: B, or this process (which plays all the clients)?
      const cpuB = ((await b.cpuSeconds()) ?? 0) - (cpuBefore.b ?? 0);
      const testCpu = process.cpuUsage(cpuBefore.test);
      const cpuTest = (testCpu.user + testCpu.system) / 1e6;

      const closes = world.subscribers.flatMap((subscriber) => subscriber.closes.filter((close) => close.at >= sigterm && close.instance === a.name));
      const closeCodes: Record<string, number> = {};
      for (const close of closes) closeCodes[close.code] = (closeCodes[close.code] ?? 0) + 1;
      const lastCloseMs = closes.reduce((last, close) => Math.max(last, close.at - sigterm), 0);
      const upgradesOnB = world.log.attempts.filter((attempt) => attempt.route === 'upgrade' && attempt.source === 'subscriber' && attempt.instance === b.name && attempt.startedAt >= sigterm);
      const rssAfter = await b.rssKiB();

      const report = await world.finishRun('reconnect-storm', run, { start: sigterm, end: sigterm + reconnectedMs }, {
        streams,
        'subscriber clients': world.recipients.length + world.instances.length,
        'reconnect delay': `${scale.reconnectDelayMs} ms + up to ${scale.reconnectJitterMs} ms`,
        'A: exit code / exited after SIGTERM': `${exitCode} / ${(exitedAfterMs / 1000).toFixed(1)} s`,
        'close codes seen from A': closeCodes,
        'last close from A after SIGTERM': `${(lastCloseMs / 1000).toFixed(1)} s`,
        [`${RECONNECTED_SHARE * 100} % reconnected to B after SIGTERM`]: `${(reconnectedMs / 1000).toFixed(1)} s`,
        '100 % reconnected to B after SIGTERM': `${(allReconnectedMs / 1000).toFixed(1)} s`,
        'upgrade attempts on B (storm)': upgradesOnB.length,
        'CPU used until 100 % reconnected: B / test process': `${cpuB.toFixed(1)} s / ${cpuTest.toFixed(1)} s`,
        'B RSS before / peak / after': `${mib(rssBefore)} / ${mib(Math.max(0, ...rssSamples))} / ${mib(rssAfter)}`,
      });

      expectDeliveryGuarantee(report);
      expect.soft(exitCode, "A's exit code after SIGTERM").toBe(0);
      expect.soft(closes.length, 'streams closed by A').toBe(streams);
      expect.soft(closeCodes, 'close codes from A').toEqual({ 1001: streams });
    } finally {
      clearInterval(sampler);
    }
  }, 900_000);
});

const mib = (kib: number | undefined) => (kib === undefined ? '—' : `${(kib / 1024).toFixed(0)} MiB`);
