import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeliveryCheck } from './checker.js';
import type { Publication } from './publisher.js';
import { type Attempt, latency, type Route, succeeded } from './requests.js';

/** When the fault began and ended (equal for an instantaneous one such as a SIGKILL). */
export interface FaultWindow {
  start: number;
  end: number;
}

export interface RouteSummary {
  route: Route;
  requests: number;
  /** Failed answers by outcome, e.g. {"503": 12, "network error": 3}. */
  failures: Record<string, number>;
  /** The same per instance, e.g. {"A": {"network error": 3}}. */
  failuresByInstance: Record<string, Record<string, number>>;
  /** Failures that carried Retry-After. */
  failuresWithRetryAfter: number;
  p95Ms: number;
  /** Longest wait of a request that overlapped the fault window (until recovery). */
  longestWaitInFaultMs: number;
  /** From the end of the fault until this route's probes succeeded for good. */
  recoveryMs: number | undefined;
}

export interface ScenarioReport {
  scenario: string;
  scale: string;
  durationMs: number;
  publishes: { planned: number; accepted: number; refused: number; givenUp: number; attempts: number };
  delivery: DeliveryCheck;
  routes: RouteSummary[];
  /** Until publish, token and /health all succeeded again after the fault. */
  recoveryMs: number | undefined;
  faultWindow: FaultWindow;
  /** Scenario-specific measurements (storm timings, memory, …). */
  extra: Record<string, unknown>;
}

const ROUTES: Route[] = ['publish', 'token', 'health', 'upgrade', 'sse'];
/** The routes whose recovery means "full service" (publishes, token requests, /health). */
const SERVICE_ROUTES: Route[] = ['publish', 'token', 'health'];

export function summarise(input: {
  scenario: string;
  scale: string;
  startedAt: number;
  attempts: Attempt[];
  load: Publication[];
  delivery: DeliveryCheck;
  fault: FaultWindow;
  extra?: Record<string, unknown>;
}): ScenarioReport {
  const probes = input.attempts.filter((attempt) => attempt.source === 'probe');
  const recoveryByRoute = new Map(ROUTES.map((route) => [route, recoveryAfter(probes.filter((attempt) => attempt.route === route), input.fault.end)]));
  const serviceRecoveries = SERVICE_ROUTES.map((route) => recoveryByRoute.get(route));
  const recoveryMs = serviceRecoveries.some((value) => value === undefined) ? undefined : Math.max(...(serviceRecoveries as number[]));
  // "During the fault" lasts until the service has recovered.
  const windowEnd = input.fault.end + (recoveryMs ?? 0);
  // Routes nobody used (no event-stream subscribers) are left out.
  const routes = ROUTES.filter((route) => route !== 'sse' || input.attempts.some((attempt) => attempt.route === route)).map((route): RouteSummary => {
    const ofRoute = input.attempts.filter((attempt) => attempt.route === route);
    const failed = ofRoute.filter((attempt) => !succeeded(attempt));
    const failures: Record<string, number> = {};
    const failuresByInstance: Record<string, Record<string, number>> = {};
    for (const attempt of failed) {
      const outcome = String(attempt.outcome);
      failures[outcome] = (failures[outcome] ?? 0) + 1;
      const ofInstance = (failuresByInstance[attempt.instance] ??= {});
      ofInstance[outcome] = (ofInstance[outcome] ?? 0) + 1;
    }
    const inFault = ofRoute.filter((attempt) => attempt.endedAt >= input.fault.start && attempt.startedAt <= windowEnd);
    return {
      route,
      requests: ofRoute.length,
      failures,
      failuresByInstance,
      failuresWithRetryAfter: failed.filter((attempt) => attempt.retryAfter).length,
      p95Ms: percentile(ofRoute.map(latency), 0.95),
      longestWaitInFaultMs: inFault.reduce((longest, attempt) => Math.max(longest, latency(attempt)), 0),
      recoveryMs: recoveryByRoute.get(route),
    };
  });
  return {
    scenario: input.scenario,
    scale: input.scale,
    durationMs: Date.now() - input.startedAt,
    publishes: {
      planned: input.load.length,
      accepted: input.load.filter((publication) => publication.acceptedAt !== undefined).length,
      refused: input.load.filter((publication) => publication.refused).length,
      givenUp: input.load.filter((publication) => publication.acceptedAt === undefined && !publication.refused).length,
      attempts: input.load.reduce((sum, publication) => sum + publication.attempts, 0),
    },
    delivery: input.delivery,
    routes,
    recoveryMs,
    faultWindow: input.fault,
    extra: input.extra ?? {},
  };
}

/**
 * How long after `faultEnd` a route's probes started succeeding for good: the end of the first
 * success after the last failure. 0 when nothing failed after the fault; undefined when the
 * route never recovered (or was never probed after the fault).
 */
function recoveryAfter(probes: Attempt[], faultEnd: number): number | undefined {
  const after = probes.filter((attempt) => attempt.endedAt >= faultEnd).sort((a, b) => a.startedAt - b.startedAt);
  if (after.length === 0) return undefined;
  const lastFailure = after.findLastIndex((attempt) => !succeeded(attempt));
  if (lastFailure === -1) return 0;
  const recovered = after[lastFailure + 1];
  return recovered ? recovered.endedAt - faultEnd : undefined;
}

export function percentile(values: number[], fraction: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)];
}

/** Prints the scenario's tables (markdown) and writes the report as JSON under the OS temp folder. */
export async function publishReport(report: ScenarioReport): Promise<string> {
  const { delivery, publishes } = report;
  const rows: [string, string][] = [
    ['scale', report.scale],
    ['duration', seconds(report.durationMs)],
    ['publishes accepted (202) / planned', `${publishes.accepted} / ${publishes.planned}`],
    ['publish attempts (incl. retries)', String(publishes.attempts)],
    ['refused (4xx) / given up', `${publishes.refused} / ${publishes.givenUp}`],
    ['delivered / lost, of accepted (load + probe publishes)', `${delivery.delivered} / ${delivery.lost}, of ${delivery.accepted}`],
    ['recipients out of order', String(delivery.outOfOrder.length)],
    ['duplicates (same subscriber)', String(delivery.duplicates)],
    ['resets (history said to be incomplete)', String(delivery.byKind.reduce((sum, kind) => sum + kind.resets, 0))],
    ['misdelivered', String(delivery.misdelivered)],
    ['recovery (publish, token, /health)', report.recoveryMs === undefined ? 'never' : seconds(report.recoveryMs)],
    ...Object.entries(report.extra).map(([name, value]): [string, string] => [name, typeof value === 'string' ? value : JSON.stringify(value)]),
  ];
  const lines = [
    `### ${report.scenario}`,
    '',
    '| measure | value |',
    '|---|---|',
    ...rows.map(([name, value]) => `| ${name} | ${value} |`),
    '',
    '| subscriber kind | subscribers | streams opened in the run | accepted | delivered | lost | recipients out of order | duplicates | misdelivered | resets |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...delivery.byKind.map(
      (kind) =>
        `| ${kind.kind} | ${kind.subscribers} | ${kind.reconnects} | ${kind.accepted} | ${kind.delivered} | ${kind.lost} | ${kind.outOfOrder.length} | ${kind.duplicates}${kind.repeatsAllowed ? '' : ' (none allowed)'} | ${kind.misdelivered} | ${kind.resets} |`,
    ),
    '',
    '| route | requests | failures (by instance) | with Retry-After | p95 | longest wait in fault | recovery |',
    '|---|---|---|---|---|---|---|',
    ...report.routes.map(
      (route) =>
        `| ${route.route} | ${route.requests} | ${formatFailures(route.failuresByInstance)} | ${route.failuresWithRetryAfter} | ${route.p95Ms} ms | ${route.longestWaitInFaultMs} ms | ${route.recoveryMs === undefined ? '—' : seconds(route.recoveryMs)} |`,
    ),
  ];
  const folder = join(tmpdir(), 'voyage-connect-faults');
  await mkdir(folder, { recursive: true });
  const path = join(folder, `${report.scenario}.${report.scale}.json`);
  await writeFile(path, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`${lines.join('\n')}\n\nreport: ${path}\n`);
  return path;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
/** "A: 503 × 7, network error × 3; B: 503 × 2" */
const formatFailures = (byInstance: Record<string, Record<string, number>>) =>
  Object.keys(byInstance).length === 0
    ? 'none'
    : Object.entries(byInstance)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([instance, failures]) => `${instance}: ${Object.entries(failures).map(([outcome, count]) => `${outcome} × ${count}`).join(', ')}`)
        .join('; ');
