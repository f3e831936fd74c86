/**
 * How big the fault scenarios are. FAULTS_SCALE=fast (default) keeps a run short enough for
 * `npm test`; FAULTS_SCALE=full is the load the guarantees are meant for (`npm run test:faults`).
 */
export interface Scale {
  name: 'fast' | 'full';
  /** Notifications published per scenario (each answered 202 in the end). */
  publishes: number;
  /** Steady publish rate across all recipients, per second. */
  publishesPerSecond: number;
  /** Subscriber clients that receive the publishes (one stream each, spread over the instances). */
  recipients: number;
  /** Stream connections opened for the reconnect storm. */
  stormConnections: number;
  /** Stream connections per subscriber client in the storm (clients = connections / this). */
  stormConnectionsPerClient: number;
  /** How long PostgreSQL is stopped, or a lock is held. */
  faultMs: number;
  /** A subscriber's reconnect delay after a close: base plus up to `jitter` (the seed: 5 s + 1 s). */
  reconnectDelayMs: number;
  reconnectJitterMs: number;
}

const SCALES: Record<Scale['name'], Scale> = {
  fast: {
    name: 'fast',
    publishes: 1_000,
    publishesPerSecond: 200,
    recipients: 20,
    stormConnections: 300,
    stormConnectionsPerClient: 10,
    faultMs: 5_000,
    reconnectDelayMs: 500,
    reconnectJitterMs: 500,
  },
  full: {
    name: 'full',
    publishes: 5_000,
    publishesPerSecond: 250,
    recipients: 50,
    stormConnections: 3_000,
    stormConnectionsPerClient: 30,
    faultMs: 20_000,
    reconnectDelayMs: 5_000,
    reconnectJitterMs: 1_000,
  },
};

export function currentScale(): Scale {
  const name = process.env.FAULTS_SCALE ?? 'fast';
  if (name !== 'fast' && name !== 'full') throw new Error(`FAULTS_SCALE must be fast or full (got "${name}")`);
  return SCALES[name];
}

/**
 * Bounds the scenarios assert. One place, so a reader sees what "no request waits forever" means.
 */
export const LIMITS = {
  /** A client gives up on one request after this long and retries elsewhere (it "hung"). */
  requestTimeoutMs: 15_000,
  /** During a database outage or a lock, no request may take longer than this. */
  maxWaitDuringFaultMs: 6_000,
  /** Token requests do not depend on the notifications table: they stay fast under its locks. */
  maxTokenLatencyUnderLockMs: 1_000,
  /** Publishes to recipients other than a locked one. */
  otherRecipientsP95Ms: 1_000,
  /** /health answers 200 again this soon after PostgreSQL is back. */
  healthRecoveryMs: 10_000,
} as const;
