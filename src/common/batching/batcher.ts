export interface BatcherOptions<In> {
  /** Most items in one flush. */
  maxBatch: number;
  /** Flushes under way at once (default 1): with more, one slow flush does not hold up the items behind it. */
  concurrency?: number;
  /**
   * Items with the same key are never in two flushes under way at once, so they are flushed in
   * the order they were submitted.
   */
  keyOf?: (item: In) => string;
  /** Keys whose items go in flushes of their own (a key known to be slow must not slow the others down). */
  alone?: (key: string) => boolean;
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
  private readonly busyKeys = new Set<string>();
  private readonly options: Required<Omit<BatcherOptions<In>, 'keyOf' | 'alone'>> & BatcherOptions<In>;

  constructor(
    private readonly flush: (items: In[]) => Promise<Out[]>,
    options: number | BatcherOptions<In>,
  ) {
    this.options = { concurrency: 1, ...(typeof options === 'number' ? { maxBatch: options } : options) };
  }

  submit(item: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, key: this.options.keyOf?.(item), resolve, reject });
      this.drain();
    });
  }

  private drain(): void {
    while (this.running < this.options.concurrency && this.queue.length > 0) {
      const batch = this.take();
      if (batch.length === 0) return; // what waits belongs to keys under way
      this.running++;
      void this.run(batch).finally(() => {
        this.running--;
        for (const entry of batch) if (entry.key !== undefined) this.busyKeys.delete(entry.key);
        this.drain();
      });
    }
  }

  /** The next batch, in submit order, leaving in the queue the items of keys that are under way. */
  private take(): Entry<In, Out>[] {
    const { maxBatch, alone } = this.options;
    if (this.options.keyOf === undefined) return this.queue.splice(0, maxBatch);
    const batch: Entry<In, Out>[] = [];
    const rest: Entry<In, Out>[] = [];
    let soloKey: string | undefined;
    for (const entry of this.queue) {
      const key = entry.key!;
      const eligible =
        batch.length < maxBatch &&
        !this.busyKeys.has(key) &&
        (soloKey === undefined ? batch.length === 0 || !alone?.(key) : key === soloKey);
      if (eligible) {
        if (batch.length === 0 && alone?.(key)) soloKey = key;
        batch.push(entry);
      } else rest.push(entry);
    }
    // Keys are marked busy only now: a key skipped above keeps all its later items waiting too.
    for (const entry of batch) this.busyKeys.add(entry.key!);
    this.queue = rest;
    return batch;
  }

  private async run(batch: Entry<In, Out>[]): Promise<void> {
    try {
      const results = await this.flush(batch.map((entry) => entry.item));
      batch.forEach((entry, index) => entry.resolve(results[index]));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    }
  }
}
