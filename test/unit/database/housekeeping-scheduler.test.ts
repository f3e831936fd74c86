import { readFileSync } from 'node:fs';
import type { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import type { Env } from '../../../src/config/env.js';
import { HousekeepingService } from '../../../src/database/housekeeping.service.js';

/** A data source whose advisory lock is always free: the round's purges are all that runs. */
const lockFree = { createQueryRunner: () => ({ connect: async () => {}, release: async () => {}, query: async () => [{ locked: true }] }) } as unknown as DataSource;

describe('the housekeeping scheduler', () => {
  it('knows no table: every purge is registered by the owner of its table', () => {
    const source = readFileSync(new URL('../../../src/database/housekeeping.service.ts', import.meta.url), 'utf8');
    expect(source.match(/\b(?:DELETE\s+FROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|TRUNCATE)\b/g)).toBeNull();
  });

  it('runs the expired purges before the unreferenced ones, whatever the order they were registered in, each until a batch comes back short', async () => {
    const scheduler = new HousekeepingService(lockFree, {} as Env);
    const calls: string[] = [];
    const purge = (name: string, batches: number[]) => async () => {
      calls.push(name);
      return batches.shift() ?? 0;
    };
    scheduler.register(purge('orphans', [2]), 'unreferenced');
    scheduler.register(purge('codes', [5_000, 3]));
    scheduler.register(purge('sessions', [1]));
    expect(await scheduler.purge()).toBe(5_006);
    expect(calls).toEqual(['codes', 'codes', 'sessions', 'orphans']);
  });
});
