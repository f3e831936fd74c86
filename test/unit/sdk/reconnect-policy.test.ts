import { describe, expect, it } from 'vitest';
import { nextAttempt } from '../../../packages/device/src/reconnect-policy.js';

/** The TypeScript SDK's reconnect table (the contract's rules), with the jitter at its most. */
describe("the device SDK's reconnect rules", () => {
  const most = () => 1;
  const closed = (code: number, wasOpen = true) => ({ kind: 'closed' as const, code, reason: '', wasOpen });
  const auto = { canFallBack: true };

  it('reconnects at once after 1001, with a new token 1 s after 4003, and later with a new token after 1008', () => {
    expect(nextAttempt(closed(1001), 0, auto, most)).toMatchObject({ waitMs: 1_000, renewToken: false });
    expect(nextAttempt(closed(4003), 0, auto, most)).toMatchObject({ waitMs: 1_000, renewToken: true });
    expect(nextAttempt(closed(1008), 0, auto, most)).toMatchObject({ waitMs: 35_000, renewToken: true });
  });

  it('backs off from 5 s, doubling to 60 s, while attempts fail; honours Retry-After', () => {
    const failed = { kind: 'failed' as const, message: 'ECONNREFUSED' };
    expect([0, 1, 2, 3, 4].map((failures) => nextAttempt(failed, failures, auto, () => 0).waitMs)).toEqual([5_000, 10_000, 20_000, 40_000, 60_000]);
    expect(nextAttempt({ kind: 'refused', status: 503, retryAfterMs: 7_000 }, 3, auto).waitMs).toBe(7_000);
  });

  it("falls back to server-sent events only on a proxy's answer, never on the service's own refusals", () => {
    expect(nextAttempt({ kind: 'refused', status: 400 }, 0, auto).fallBackToSse).toBe(true);
    expect(nextAttempt({ kind: 'refused', status: 405 }, 0, { canFallBack: false }).fallBackToSse).toBeUndefined();
    for (const status of [401, 403, 429, 503, 502]) expect(nextAttempt({ kind: 'refused', status }, 0, auto).fallBackToSse).toBeUndefined();
    expect(nextAttempt({ kind: 'refused', status: 403 }, 0, auto).fatal).toBe('forbidden');
    expect(nextAttempt({ kind: 'refused', status: 401 }, 0, auto)).toMatchObject({ waitMs: 0, renewToken: true });
  });
});
