import { LRUCache } from 'lru-cache';

/**
 * Minimum interval between two polls of one state. Kept per instance (a device behind a load
 * balancer may reach several; each still enforces the interval for what it sees), bounded in
 * size, and forgotten after the state's lifetime.
 */
export class PollLimiter {
  private readonly lastPoll: LRUCache<string, number>;

  constructor(
    private readonly minIntervalMs: number,
    stateLifetimeMs: number,
    capacity = 500_000,
  ) {
    this.lastPoll = new LRUCache({ max: capacity, ttl: stateLifetimeMs });
  }

  /** Seconds to wait before polling again, or 0 when this poll may go ahead (then it counts). */
  retryAfter(stateId: string, now = Date.now()): number {
    if (this.minIntervalMs === 0) return 0; // no interval: nothing to remember
    const last = this.lastPoll.get(stateId);
    if (last !== undefined && now - last < this.minIntervalMs) return Math.ceil((this.minIntervalMs - (now - last)) / 1000);
    this.lastPoll.set(stateId, now);
    return 0;
  }
}
