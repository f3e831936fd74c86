import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/common/batching/batcher.js';

describe('Batcher', () => {
  it('writes a lone item at once, and gathers what arrives during a flush into the next one', async () => {
    const flushed: number[][] = [];
    const commit = new Batcher<number, string>(async (items) => {
      flushed.push(items);
      await new Promise((resolve) => setTimeout(resolve, 10));
      return items.map((item) => `done ${item}`);
    }, 3);

    const first = commit.submit(1);
    const later = [2, 3, 4, 5].map((item) => commit.submit(item));
    await expect(first).resolves.toBe('done 1');
    await expect(Promise.all(later)).resolves.toEqual(['done 2', 'done 3', 'done 4', 'done 5']);
    expect(flushed).toEqual([[1], [2, 3, 4], [5]]);
  });

  it('fails every caller of a failed flush, and goes on with the next batch', async () => {
    const commit = new Batcher<number, number>(async (items) => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      if (items.includes(1)) throw new Error('database down');
      return items;
    }, 10);
    const outcomes = [1, 2, 3].map((item) => commit.submit(item).catch((error: Error) => error.message));
    // 1 goes alone and fails; 2 and 3, gathered meanwhile, are written together.
    await expect(Promise.all(outcomes)).resolves.toEqual(['database down', 2, 3]);
    const together = [commit.submit(4), commit.submit(1), commit.submit(5)].map((promise) => promise.catch((error: Error) => error.message));
    await expect(Promise.all(together)).resolves.toEqual([4, 'database down', 'database down']);
  });
});
