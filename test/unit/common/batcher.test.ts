import { describe, expect, it } from 'vitest';
import { Batcher, QueueFullError } from '../../../src/common/batching/batcher.js';

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

describe('Batcher with keys and several flushes at once', () => {
  /** A flush that waits until released, recording what it was given. */
  const gated = () => {
    const flushed: string[][] = [];
    const gates: (() => void)[] = [];
    const flush = async (items: string[]) => {
      flushed.push(items);
      await new Promise<void>((resolve) => gates.push(resolve));
      return items;
    };
    return { flushed, releaseAll: () => gates.splice(0).forEach((open) => open()), flush };
  };

  it('with overlapAfterMs, gathers what arrives during a young flush, and starts another beside a flush that has run that long', async () => {
    const { flushed, releaseAll, flush } = gated();
    const batcher = new Batcher<string, string>(flush, { maxBatch: 10, concurrency: 4, overlapAfterMs: 60 });
    const results = ['a', 'b', 'c'].map((item) => batcher.submit(item));
    await new Promise((resolve) => setTimeout(resolve, 20));
    // 'a' is under way and young: 'b' and 'c' wait for the next flush, together, although slots are free.
    expect(flushed).toEqual([['a']]);
    await new Promise((resolve) => setTimeout(resolve, 80));
    // 'a' is still stuck: past 60 ms, the others go beside it.
    expect(flushed).toEqual([['a'], ['b', 'c']]);
    releaseAll();
    await expect(Promise.all(results)).resolves.toEqual(['a', 'b', 'c']);
  });

  it('never puts one key in two flushes under way, and lets other keys pass a stuck one', async () => {
    const { flushed, releaseAll, flush } = gated();
    const batcher = new Batcher<string, string>(flush, { maxBatch: 10, concurrency: 2, keyOf: (item) => item[0] });
    const results = ['a1', 'a2', 'b1', 'a3', 'b2'].map((item) => batcher.submit(item));
    await new Promise((resolve) => setTimeout(resolve, 5));
    // a1 is under way: a2 and a3 wait for it even though a slot is free; b1 goes beside it.
    expect(flushed).toEqual([['a1'], ['b1']]);
    for (let round = 0; round < 3; round++) {
      releaseAll();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await expect(Promise.all(results)).resolves.toEqual(['a1', 'a2', 'b1', 'a3', 'b2']);
    expect(flushed.slice(2).find((batch) => batch.includes('a2'))).toEqual(expect.arrayContaining(['a2', 'a3']));
    expect(flushed.flat()).toHaveLength(5);
  });

  it('gives a key marked alone flushes of its own', async () => {
    const { flushed, releaseAll, flush } = gated();
    const batcher = new Batcher<string, string>(flush, { maxBatch: 10, concurrency: 1, keyOf: (item) => item[0], alone: (key) => key === 's' });
    const first = batcher.submit('x0');
    const rest = ['s1', 'b1', 's2', 'c1'].map((item) => batcher.submit(item));
    releaseAll();
    await first;
    for (let round = 0; round < 3; round++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      releaseAll();
    }
    await Promise.all(rest);
    expect(flushed).toEqual([['x0'], ['s1', 's2'], ['b1', 'c1']]);
  });

  it('queues submitAll items together, so they share a flush', async () => {
    const { flushed, releaseAll, flush } = gated();
    const batcher = new Batcher<string, string>(flush, { maxBatch: 10, concurrency: 4, keyOf: (item) => item[0] });
    const results = batcher.submitAll(['a1', 'b1', 'a2', 'c1']);
    await new Promise((resolve) => setTimeout(resolve, 5));
    releaseAll();
    await expect(Promise.all(results)).resolves.toEqual(['a1', 'b1', 'a2', 'c1']);
    expect(flushed).toEqual([['a1', 'b1', 'a2', 'c1']]);
  });

  it('puts an item its flush says to retry back ahead of the later items of its key, and answers it once done', async () => {
    const flushed: string[][] = [];
    let refusals = 2;
    const batcher = new Batcher<string, string>(
      async (items) => {
        flushed.push(items);
        await new Promise((resolve) => setTimeout(resolve, 2));
        // Like a lock held elsewhere: the key's items in this flush are all refused, or none.
        const refused = items.some((item) => item.startsWith('a')) && refusals-- > 0;
        return items.map((item) => (refused && item.startsWith('a') ? 'busy' : item));
      },
      { maxBatch: 10, concurrency: 2, keyOf: (item) => item[0], retry: (out) => out === 'busy' },
    );
    const first = batcher.submit('a1');
    const later = batcher.submitAll(['b1', 'a2', 'a3']);
    await expect(Promise.all([first, ...later])).resolves.toEqual(['a1', 'b1', 'a2', 'a3']);
    const order = flushed.flat().filter((item) => item.startsWith('a'));
    // a1 was tried until done, and the later items of its key stayed behind it every time.
    expect(order).toEqual(['a1', 'a1', 'a2', 'a3', 'a1', 'a2', 'a3']);
  });

  it('keeps submit order per key when a full batch leaves items behind', async () => {
    const flushed: string[][] = [];
    const batcher = new Batcher<string, string>(
      async (items) => {
        flushed.push(items);
        await new Promise((resolve) => setTimeout(resolve, 1));
        return items;
      },
      { maxBatch: 3, concurrency: 2, keyOf: (item) => item[0] },
    );
    const items = ['a1', 'b1', 'a2', 'c1', 'a3', 'b2', 'a4', 'c2', 'b3'];
    await expect(Promise.all(batcher.submitAll(items))).resolves.toEqual(items);
    for (const key of ['a', 'b', 'c']) expect(flushed.flat().filter((item) => item[0] === key)).toEqual(items.filter((item) => item[0] === key));
    expect(flushed.every((batch) => batch.length <= 3)).toBe(true);
  });

  it('refuses a submit, queuing nothing of it, while maxWaiting items wait; a submitAll is taken or refused whole', async () => {
    const { flushed, releaseAll, flush } = gated();
    const batcher = new Batcher<string, string>(flush, { maxBatch: 10, concurrency: 1, keyOf: (item) => item[0], maxWaiting: 3 });
    const first = batcher.submit('a1'); // under way, not waiting
    const waiting = [batcher.submit('b1'), ...batcher.submitAll(['b2', 'c1'])];
    expect(() => batcher.submit('d1')).toThrow(QueueFullError);
    expect(() => batcher.submitAll(['d2', 'd3'])).toThrow(QueueFullError);
    expect(batcher.submitAll([])).toEqual([]);
    for (let round = 0; round < 2; round++) {
      releaseAll();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await expect(Promise.all([first, ...waiting])).resolves.toEqual(['a1', 'b1', 'b2', 'c1']);
    expect(flushed.flat()).toEqual(['a1', 'b1', 'b2', 'c1']);
    // Room again once they were taken.
    const later = batcher.submit('d1');
    releaseAll();
    await new Promise((resolve) => setTimeout(resolve, 5));
    releaseAll();
    await expect(later).resolves.toBe('d1');
  });

  it('answers an item that is dropped while it waits with the drop result and never flushes it', async () => {
    const { flushed, releaseAll, flush } = gated();
    const gone = new Set<string>();
    const batcher = new Batcher<string, string>(flush, { maxBatch: 10, concurrency: 1, keyOf: (item) => item[0], drop: (item) => (gone.has(item) ? `dropped ${item}` : undefined) });
    const first = batcher.submit('a1');
    const rest = ['a2', 'b1', 'a3'].map((item) => batcher.submit(item));
    gone.add('a2').add('b1');
    releaseAll();
    await first;
    await new Promise((resolve) => setTimeout(resolve, 5));
    releaseAll();
    await expect(Promise.all(rest)).resolves.toEqual(['dropped a2', 'dropped b1', 'a3']);
    expect(flushed).toEqual([['a1'], ['a3']]);
  });
});
