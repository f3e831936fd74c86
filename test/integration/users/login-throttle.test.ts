import type { TestingModule } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoginThrottleService } from '../../../src/users/login-throttle.service.js';
import { UsersModule } from '../../../src/users/users.module.js';
import { startTestingModule } from '../../factories/testing-module.js';
import { createTestDatabase } from '../../setup/database.js';

describe('LoginThrottleService', () => {
  let app: TestingModule;
  let throttle: LoginThrottleService;

  beforeAll(async () => {
    app = await startTestingModule(await createTestDatabase(), UsersModule);
    throttle = app.get(LoginThrottleService);
  });
  afterAll(() => app?.close());

  // An attempt within the free allowance leaves its row "blocked until" its own statement's start.
  // A simultaneous attempt whose statement started a moment earlier, but read after that commit,
  // must not take that instant for a slow-down: the allowance is what decides.
  it('lets simultaneous attempts within the allowance all go ahead, round after round', async () => {
    const refused: string[] = [];
    for (let round = 0; round < 60; round++) {
      const keys = { username: `together-${round}`, address: '203.0.113.7' };
      const outcomes = await Promise.all(
        Array.from({ length: 4 }, async () => {
          const wait = await throttle.waitSeconds(keys);
          if (wait > 0) return `round ${round}: wait ${wait}`;
          return (await throttle.reserve(keys)) ? null : `round ${round}: reservation refused`;
        }),
      );
      refused.push(...outcomes.filter((outcome): outcome is string => outcome !== null));
      await Promise.all(Array.from({ length: 4 }, () => throttle.recordSuccess(keys)));
    }
    expect(refused).toEqual([]);
  });

  it('still refuses the attempt past the allowance, and says how long to wait', async () => {
    const keys = { username: 'guesser-target', address: '198.51.100.9' };
    const reserved = await Promise.all(Array.from({ length: 8 }, () => throttle.reserve(keys)));
    expect(reserved.filter(Boolean).length).toBeLessThan(8);
    expect(await throttle.waitSeconds(keys)).toBeGreaterThan(0);
  });
});
