/**
 * Small helpers shared by bench/websocket.ts and its load generator (bench/lib/ws-load.ts):
 * process memory and CPU from /proc, percentiles, and the stream's address.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';

/** Path of our service's notification stream (CONTRACT.md, notification service #1). */
export const STREAM_PATH = '/voyage/notification/v1/ws/products';
/** What baseline-ws.mjs accepts by default (plain string equality). */
export const ANCHOR_WS_AUTH = 'Bearer anchor-ws-token';

/** What the push load generator needs from our service (written to a file by bench/websocket.ts). */
export interface PushFixtures {
  base: string;
  /** A fleet's instances (scenario 8): connections and publish requests go round-robin over them; absent, `base` alone. */
  bases?: string[];
  /** Bearer token with notification:publish. */
  publishToken: string;
  subscribers: { clientId: string; token: string }[];
  connsPerSubscriber: number;
}

/** A report-ready notification with the notification's fields in their documented order, as the publish route stores them. */
export function benchNotification(correlationId: string, origin: string, stamp = new Date().toISOString()) {
  return {
    correlationId,
    productName: 'RouteAdvice',
    origin,
    status: 'New',
    statusTimestamp: stamp,
    deliverables: [{ productType: 'pdf' }],
    customerReferenceId: 'bench',
    routeCalculationScheduleId: randomUUID(),
    warnings: [],
    creationDate: stamp,
  };
}

const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString()) || 100;

/** Resident set size of a process in bytes (VmRSS), read the same way for every server. */
export function vmRss(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]) * 1024;
}

/** User + system CPU seconds a process has used so far. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return Number.NaN;
  }
}

/** Direct children of a process, from /proc. */
export function childrenOf(parent: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

/** Epoch milliseconds with sub-millisecond resolution. */
export const now = () => performance.timeOrigin + performance.now();
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
export const round = (value: number, digits = 1) => (Number.isFinite(value) ? Math.round(value * 10 ** digits) / 10 ** digits : null);
export const mb = (bytes: number) => round(bytes / 1048576, 1);

/** The p-th percentile (0–100) of an ascending array, nearest-rank like ws-load.mjs. */
export function percentile(sorted: ArrayLike<number>, p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function median(values: number[]): number | undefined {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor(sorted.length / 2)] : undefined;
}
