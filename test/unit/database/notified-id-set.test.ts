import { afterEach, describe, expect, it, vi } from 'vitest';
import { NotifiedIdSet } from '../../../src/database/notified-id-set.js';
import type { PgListenerService } from '../../../src/database/pg-listener.service.js';
import { KeyRevocationListenerService } from '../../../src/keys/key-revocation-listener.service.js';
import type { KeysService } from '../../../src/keys/keys.service.js';

/** A listener that runs its resume hooks when told to, as after a (re)connection. */
function fakeListener() {
  const hooks: (() => void)[] = [];
  const listener = { on: () => {}, onResume: (hook: () => void) => hooks.push(hook), isListening: true } as unknown as PgListenerService;
  return { listener, resume: () => hooks.forEach((hook) => hook()) };
}

/** A read that fails when the test says so, as one under way while the database closes. */
function pendingRead() {
  let fail!: (error: Error) => void;
  const read = vi.fn(() => new Promise<never>((_, reject) => (fail = reject)));
  return { read, fail: (message: string) => fail(new Error(message)) };
}

describe('a mirror whose read is under way when the application stops', () => {
  afterEach(() => vi.useRealTimers());

  it('NotifiedIdSet schedules no retry once stopped, and retries while running', async () => {
    vi.useFakeTimers();
    const { listener, resume } = fakeListener();
    const { read, fail } = pendingRead();
    const set = new NotifiedIdSet(listener, 'channel', read);
    resume();
    fail('connection refused');
    await vi.advanceTimersByTimeAsync(0);
    expect(vi.getTimerCount()).toBe(2); // the pruner and the retry
    await vi.advanceTimersByTimeAsync(5_000);
    expect(read).toHaveBeenCalledTimes(2);

    set.stop();
    fail('Driver not Connected');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(vi.getTimerCount()).toBe(0);
    expect(read).toHaveBeenCalledTimes(2);
  });

  it('KeyRevocationListenerService schedules no retry once shut down', async () => {
    vi.useFakeTimers();
    const { listener, resume } = fakeListener();
    const { read, fail } = pendingRead();
    const service = new KeyRevocationListenerService(listener, { refresh: read } as unknown as KeysService);
    resume();
    service.onApplicationShutdown();
    fail('Driver not Connected');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(vi.getTimerCount()).toBe(0);
    expect(read).toHaveBeenCalledTimes(1);
  });
});
