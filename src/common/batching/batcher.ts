/**
 * Gathers the items submitted while a flush is under way and handles them together in the next
 * one: one database round trip (and for writes one commit) for many callers, each answered with
 * its own result once the flush is done. Under light load every item goes alone and waits for
 * nothing; under heavy load batches grow by themselves, up to `maxBatch`.
 */
export class Batcher<In, Out> {
  private queue: { item: In; resolve: (out: Out) => void; reject: (error: unknown) => void }[] = [];
  private flushing = false;

  constructor(
    private readonly flush: (items: In[]) => Promise<Out[]>,
    private readonly maxBatch: number,
  ) {}

  submit(item: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.flushing) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.flushing = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const results = await this.flush(batch.map((entry) => entry.item));
        batch.forEach((entry, index) => entry.resolve(results[index]));
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
    }
    this.flushing = false;
  }
}
