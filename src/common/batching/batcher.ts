import { performance } from 'node:perf_hooks';
export interface BatcherOptions<In, Out> {
  /** Most items in one flush. */
  maxBatch: number;
  /** Flushes under way at once (default 1): with more, one slow flush does not hold up the items behind it. */
  concurrency?: number;
  /**
   * With `concurrency` above 1: another flush starts only once every flush under way has run this
   * long (default 0, at once). Meanwhile the items gather for the next flush, as with one at a
   * time, and a flush that is slow (a lock, a stalled statement) still holds up only its own.
   */
  overlapAfterMs?: number;
  /**
   * Items with the same key are never in two flushes under way at once, so they are flushed in
   * the order they were submitted.
   */
  keyOf?: (item: In) => string;
  /** Keys whose items go in flushes of their own (a key known to be slow must not slow the others down). */
  alone?: (key: string) => boolean;
  /**
   * Results that mean "not done, try again": the item goes back to the head of the queue, ahead
   * of later items of its key, and its caller waits on. Asked with the item's key still busy, so
   * nothing of that key can slip in front of it. A flush that asks to retry an item must ask it
   * for the later items of its key in the same flush too, or they would pass it.
   */
  retry?: (out: Out, item: In) => boolean;
  /** Most items that may wait (items in flushes under way aside); a submit that finds this many waiting throws QueueFullError. */
  maxWaiting?: number;
  /**
   * An item that is no longer wanted (nobody waits for its result) is answered with the result
   * this gives, when the queue comes to it, and never flushed; undefined flushes it as usual.
   */
  drop?: (item: In) => Out | undefined;
}

/** The queue already holds `maxWaiting` items: the submit was refused, and nothing of it queued. */
export class QueueFullError extends Error {
  constructor(waiting: number) {
    super(`${waiting} items are waiting already`);
    this.name = 'QueueFullError';
  }
}

interface Entry<In, Out> {
  item: In;
  key?: string;
  resolve: (out: Out) => void;
  reject: (error: unknown) => void;
}

/**
 * Gathers the items submitted while a flush is under way and handles them together in the next
 * one: one database round trip (and for writes one commit) for many callers, each answered with
 * its own result once the flush is done. Under light load every item goes alone and waits for
 * nothing; under heavy load batches grow by themselves, up to `maxBatch`.
 */
export class Batcher<In, Out> {
  private queue: Entry<In, Out>[] = [];
  private running = 0;
  /** When the youngest flush under way started (performance.now()), and the timer that drains again once it is old enough. */
  private lastStart = 0;
  private overlapTimer?: NodeJS.Timeout;
  private readonly busyKeys = new Set<string>();
  /** Every waiting item's key is under way: nothing can be taken until a flush ends or a free key arrives. */
  private stalled = false;
  private readonly options: Required<Pick<BatcherOptions<In, Out>, 'maxBatch' | 'concurrency'>> & BatcherOptions<In, Out>;

  constructor(
    private readonly flush: (items: In[]) => Promise<Out[]>,
    options: number | BatcherOptions<In, Out>,
  ) {
    this.options = { concurrency: 1, ...(typeof options === 'number' ? { maxBatch: options } : options) };
  }

  /** Queues an item; throws QueueFullError (queuing nothing) when `maxWaiting` items wait already. */
  submit(item: In): Promise<Out> {
    this.admit();
    const result = this.enqueue(item);
    this.drain();
    return result;
  }

  /**
   * Several items, queued in order before any flush starts, so they can share one. They are taken
   * or refused together: admitted while fewer than `maxWaiting` items wait, so one submit may pass
   * the bound by its own size.
   */
  submitAll(items: In[]): Promise<Out>[] {
    if (items.length === 0) return [];
    this.admit();
    const results = items.map((item) => this.enqueue(item));
    this.drain();
    return results;
  }

  private admit(): void {
    const { maxWaiting } = this.options;
    if (maxWaiting !== undefined && this.queue.length >= maxWaiting) throw new QueueFullError(this.queue.length);
  }

  private enqueue(item: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      const key = this.options.keyOf?.(item);
      this.queue.push({ item, key, resolve, reject });
      if (key === undefined || !this.busyKeys.has(key)) this.stalled = false;
    });
  }

  private drain(): void {
    while (!this.stalled && this.running < this.options.concurrency && this.queue.length > 0) {
      if (this.running > 0 && this.waitingToOverlap()) return;
      const batch = this.take();
      if (batch.length === 0) {
        this.stalled = true; // what waits belongs to keys under way
        return;
      }
      this.running++;
      this.lastStart = performance.now();
      void this.run(batch).finally(() => {
        this.running--;
        for (const entry of batch) if (entry.key !== undefined) this.busyKeys.delete(entry.key);
        this.stalled = false;
        this.drain();
      });
    }
  }

  /** True, with a drain scheduled, while the youngest flush under way is younger than `overlapAfterMs`. */
  private waitingToOverlap(): boolean {
    const wait = this.lastStart + (this.options.overlapAfterMs ?? 0) - performance.now();
    if (wait <= 0) return false;
    this.overlapTimer ??= setTimeout(() => {
      this.overlapTimer = undefined;
      this.drain();
    }, wait).unref();
    return true;
  }

  /**
   * The next batch, in submit order, leaving in the queue (in order) the items of keys that are
   * under way, and answering the items it comes to that are dropped. The scan stops once the batch
   * is full, so a long queue costs only what is taken.
   */
  private take(): Entry<In, Out>[] {
    const { maxBatch, alone, drop } = this.options;
    if (this.options.keyOf === undefined && drop === undefined) return this.queue.splice(0, maxBatch);
    const batch: Entry<In, Out>[] = [];
    const skipped: Entry<In, Out>[] = [];
    let soloKey: string | undefined;
    let index = 0;
    for (; index < this.queue.length && batch.length < maxBatch; index++) {
      const entry = this.queue[index];
      const dropped = drop?.(entry.item);
      if (dropped !== undefined) {
        entry.resolve(dropped);
        continue;
      }
      if (entry.key === undefined) {
        batch.push(entry);
        continue;
      }
      const key = entry.key;
      const eligible = !this.busyKeys.has(key) && (soloKey === undefined ? batch.length === 0 || !alone?.(key) : key === soloKey);
      if (eligible) {
        if (batch.length === 0 && alone?.(key)) soloKey = key;
        batch.push(entry);
      } else skipped.push(entry);
    }
    // Keys are marked busy only now: a key skipped above keeps all its later items waiting too.
    for (const entry of batch) if (entry.key !== undefined) this.busyKeys.add(entry.key);
    this.queue = skipped.length === 0 ? this.queue.slice(index) : skipped.concat(this.queue.slice(index));
    return batch;
  }

  private async run(batch: Entry<In, Out>[]): Promise<void> {
    let results: Out[];
    try {
      results = await this.flush(batch.map((entry) => entry.item));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
      return;
    }
    const again: Entry<In, Out>[] = [];
    batch.forEach((entry, index) => (this.options.retry?.(results[index], entry.item) ? again.push(entry) : entry.resolve(results[index])));
    // Their keys are still busy here, so nothing of theirs was taken meanwhile: the head keeps their order.
    if (again.length > 0) this.queue = again.concat(this.queue);
  }
}
