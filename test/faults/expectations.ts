import { expect } from 'vitest';
import type { ScenarioReport } from './report.js';
import { type Attempt, latency, type Route, succeeded } from './requests.js';

/**
 * The guarantee every scenario asserts: each notification answered 202 reached its recipient,
 * per recipient in publish order, nothing went to the wrong client, every publish was accepted in
 * the end, and no request waited until the client gave up. The delivery holds for each kind of
 * subscriber on its own (a kind whose clients lose nothing cannot hide another's losses); a kind
 * that resumes exactly after its last id (SSE) gets nothing twice, and no resuming client is told
 * its history is incomplete. Soft, so one run reports every breach.
 */
export function expectDeliveryGuarantee(report: ScenarioReport) {
  expect.soft(report.publishes.refused, 'publishes refused with a 4xx').toBe(0);
  expect.soft(report.publishes.givenUp, 'publishes never accepted').toBe(0);
  expect.soft(report.delivery.lost, `lost notifications, e.g. ${report.delivery.lostExamples.slice(0, 3).join(', ')}`).toBe(0);
  expect.soft(report.delivery.outOfOrder, 'recipients whose notifications arrived out of publish order').toEqual([]);
  expect.soft(report.delivery.misdelivered, 'notifications delivered to another client').toBe(0);
  expect.soft(report.extra['unreadable messages'], 'stream messages that were not notifications').toBe(0);
  for (const kind of report.delivery.byKind) {
    expect.soft(kind.lost, `${kind.kind}: lost notifications, e.g. ${kind.lostExamples.slice(0, 3).join(', ')}`).toBe(0);
    expect.soft(kind.outOfOrder, `${kind.kind}: recipients whose notifications arrived out of publish order`).toEqual([]);
    expect.soft(kind.misdelivered, `${kind.kind}: notifications delivered to another client`).toBe(0);
    expect.soft(kind.resets, `${kind.kind}: resets (history said to be incomplete)`).toBe(0);
    if (!kind.repeatsAllowed) expect.soft(kind.duplicates, `${kind.kind}: notifications received twice by one subscriber`).toBe(0);
  }
  for (const route of report.routes) expect.soft(route.failures.timeout ?? 0, `${route.route} requests without an answer within the client's timeout`).toBe(0);
}

/** Attempts that overlap [from, to], optionally of some routes only. */
export function attemptsBetween(attempts: Attempt[], from: number, to: number, routes?: Route[]): Attempt[] {
  return attempts.filter((attempt) => attempt.endedAt >= from && attempt.startedAt <= to && (!routes || routes.includes(attempt.route)));
}

export const longestWait = (attempts: Attempt[]) => attempts.reduce((longest, attempt) => Math.max(longest, latency(attempt)), 0);

/** Counts of failed outcomes, e.g. {"500": 3, "503": 40}. */
export function failureCounts(attempts: Attempt[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const attempt of attempts.filter((candidate) => !succeeded(candidate))) counts[String(attempt.outcome)] = (counts[String(attempt.outcome)] ?? 0) + 1;
  return counts;
}

/** "publish 503 on A (publisher): started 1.2 s after the fault began, took 8.0 s" — the longest of `attempts`. */
export function describeLongest(attempts: Attempt[], faultStart: number): string {
  const longest = attempts.reduce<Attempt | undefined>((found, attempt) => (!found || latency(attempt) > latency(found) ? attempt : found), undefined);
  if (!longest) return 'no requests';
  const offset = (longest.startedAt - faultStart) / 1000;
  return `${longest.route} ${longest.outcome} on ${longest.instance} (${longest.source}): started ${Math.abs(offset).toFixed(1)} s ${offset < 0 ? 'before' : 'after'} the fault began, took ${(latency(longest) / 1000).toFixed(1)} s`;
}
