import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptsBetween, describeLongest, expectDeliveryGuarantee, failureCounts, longestWait } from './expectations.js';
import { type Attempt, type Route, succeeded } from './requests.js';
import { currentScale, LIMITS } from './scale.js';
import { SUBSCRIBER_KINDS } from './stream-kinds.js';
import { sleep, World } from './world.js';

const ROUTES: Route[] = ['publish', 'token', 'health', 'upgrade'];

/**
 * Scenario 3: PostgreSQL is stopped for the outage duration while the load runs, then started
 * again; the service processes are not restarted. During the outage every route must answer
 * quickly, failures must be 503 with Retry-After (never 500), /health must say 503; after it the
 * service must come back on its own. The subscribers are a mix of v1, v2 and SSE clients.
 */
describe(`fault: PostgreSQL outage (${currentScale().name})`, () => {
  let world: World;

  beforeAll(async () => {
    world = await World.create({ recipients: currentScale().recipients, placement: 'spread', kinds: SUBSCRIBER_KINDS });
  }, 300_000);

  afterAll(async () => {
    await world?.destroy();
  }, 120_000);

  it('answers every route promptly with 503 during the outage and recovers after it', async () => {
    const outageMs = world.scale.faultMs;
    // The load lasts longer than the outage, so publishes keep arriving before, during and after it.
    const run = world.beginRun({ count: Math.ceil((world.scale.publishesPerSecond * (outageMs + 10_000)) / 1000) });
    await sleep(2_000);
    const stopping = Date.now();
    await world.cluster.stop('fast');
    const down = Date.now();
    await sleep(outageMs);
    const starting = Date.now();
    await world.cluster.start();
    const up = Date.now();

    const during = attemptsBetween(world.log.attempts, stopping, starting);
    const failedDuring = during.filter((attempt) => !succeeded(attempt));
    const healthWhileDown = world.log.attempts.filter((attempt) => attempt.route === 'health' && attempt.source === 'probe' && attempt.startedAt >= down && attempt.endedAt <= starting);

    const report = await world.finishRun('postgres-outage', run, { start: stopping, end: up }, {
      'outage (server stopped)': `${((starting - down) / 1000).toFixed(1)} s`,
      'longest request during the outage': describeLongest(during, stopping),
      ...Object.fromEntries(ROUTES.map((route) => [`during the outage: ${route}`, describeAttempts(during.filter((attempt) => attempt.route === route))])),
    });

    expectDeliveryGuarantee(report);
    expect.soft(longestWait(during), 'longest request during the outage (ms)').toBeLessThanOrEqual(LIMITS.maxWaitDuringFaultMs);
    expect.soft(failureCounts(during), 'failures during the outage are all 503').toEqual(failedDuring.length ? { 503: failedDuring.length } : {});
    // /health's 503 is its answer ("down"), not a failed request to be retried.
    const withoutRetryAfter = failedDuring.filter((attempt) => attempt.outcome === 503 && attempt.route !== 'health' && !attempt.retryAfter);
    const withoutRetryAfterByRoute: Record<string, number> = {};
    for (const attempt of withoutRetryAfter) withoutRetryAfterByRoute[attempt.route] = (withoutRetryAfterByRoute[attempt.route] ?? 0) + 1;
    expect.soft(withoutRetryAfterByRoute, '503s without Retry-After during the outage, by route').toEqual({});
    expect.soft(healthWhileDown.length, '/health probed while the server was down').toBeGreaterThan(0);
    expect.soft(healthWhileDown.filter((attempt) => attempt.outcome !== 503).map((attempt) => attempt.outcome), '/health while down').toEqual([]);
    const health = report.routes.find((route) => route.route === 'health')!;
    expect.soft(health.recoveryMs, '/health 200 again after the start (ms)').toBeLessThanOrEqual(LIMITS.healthRecoveryMs);
    expect.soft(report.recoveryMs, 'publish, token and /health work again').toBeDefined();
  }, 600_000);
});

/** "503: 40 (Retry-After 40), 200: 3; longest 2.1 s" */
function describeAttempts(attempts: Attempt[]): string {
  const byOutcome = new Map<string, Attempt[]>();
  for (const attempt of attempts) byOutcome.set(String(attempt.outcome), [...(byOutcome.get(String(attempt.outcome)) ?? []), attempt]);
  const parts = [...byOutcome].map(([outcome, list]) => {
    const withRetryAfter = list.filter((attempt) => attempt.retryAfter).length;
    return `${outcome}: ${list.length}${withRetryAfter ? ` (Retry-After ${withRetryAfter})` : ''}`;
  });
  return `${parts.join(', ') || 'no requests'}; longest ${(longestWait(attempts) / 1000).toFixed(1)} s`;
}
