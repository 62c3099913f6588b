/**
 * Group commit for concurrent requests: items submitted while earlier batches are running are
 * gathered and run together, bounded by count (`maxSize`) and by time (an item waits at most for the
 * batches already running: nothing waits for company, so a lone item runs at once and nothing lingers
 * when the load is light).
 *
 * With `overlap`, a batch starts beside a running one only once `overlap.at` items wait, or once the
 * oldest of them has waited `overlap.afterMs`: every batch has a fixed cost (for the heartbeat's
 * statement about as much as seven heartbeats' rows), so a few items do better joining the next,
 * larger batch, unless the running one is slow (say, waiting for a row lock).
 *
 * Items with the same key never share a batch and never run in two batches at once: they run one
 * after another, in the order they came (one device's heartbeats stay serial, and batches touch
 * disjoint rows: two batches never wait for each other).
 *
 * `run` answers one result per item, in order. When it throws, nothing of the batch was done (one
 * transaction): each item of a batch of several is run again alone, so one bad item costs the others
 * nothing and gets its own error; an item alone gets the error.
 */

export interface KeyedBatcherOptions {
  /** Most items in one batch. */
  maxSize: number;
  /** Most batches running at once (each holds one database connection). */
  maxInFlight: number;
  /**
   * Fewest waiting items that start a batch while another runs, and longest fewer wait (ms). Without
   * it, any waiting item starts one.
   */
  overlap?: { at: number; afterMs: number };
}

interface Pending<I, O> {
  key: string;
  item: I;
  /** When it was submitted (performance.now()). */
  at: number;
  resolve(value: O): void;
  reject(error: unknown): void;
}

export class KeyedBatcher<I, O> {
  private queue: Pending<I, O>[] = [];
  private readonly busyKeys = new Set<string>();
  private inFlight = 0;
  private overlapTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly options: KeyedBatcherOptions,
  ) {}

  submit(key: string, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ key, item, at: performance.now(), resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.options.maxInFlight) {
      if (this.inFlight > 0 && this.waitsForNextBatch()) return;
      const batch = this.take();
      if (batch.length === 0) return; // nothing waits, or every waiting item's key is in a running batch
      this.inFlight++;
      void this.execute(batch).finally(() => {
        for (const pending of batch) this.busyKeys.delete(pending.key);
        this.inFlight--;
        this.pump();
      });
    }
  }

  /** True when the waiting items should join the next batch rather than start one now (see above). */
  private waitsForNextBatch(): boolean {
    const { overlap } = this.options;
    const oldest = this.queue[0];
    if (!overlap || !oldest || this.queue.length >= overlap.at) return false;
    const waitedMs = performance.now() - oldest.at;
    if (waitedMs >= overlap.afterMs) return false;
    this.overlapTimer ??= setTimeout(() => {
      this.overlapTimer = undefined;
      this.pump();
    }, overlap.afterMs - waitedMs);
    return true;
  }

  /** The oldest items whose keys are free, at most one per key; the rest keep their order. */
  private take(): Pending<I, O>[] {
    const batch: Pending<I, O>[] = [];
    const rest: Pending<I, O>[] = [];
    const skipped = new Set<string>();
    for (const pending of this.queue) {
      if (
        batch.length < this.options.maxSize &&
        !this.busyKeys.has(pending.key) &&
        !skipped.has(pending.key)
      ) {
        this.busyKeys.add(pending.key);
        batch.push(pending);
      } else {
        skipped.add(pending.key); // later items of this key stay behind this one
        rest.push(pending);
      }
    }
    this.queue = rest;
    return batch;
  }

  private async execute(batch: Pending<I, O>[]): Promise<void> {
    let results: O[];
    try {
      results = await this.run(batch.map((pending) => pending.item));
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      await Promise.all(batch.map((pending) => this.execute([pending])));
      return;
    }
    if (results.length !== batch.length) {
      const error = new Error(`a batch of ${batch.length} answered ${results.length} results`);
      for (const pending of batch) pending.reject(error);
      return;
    }
    for (const [i, pending] of batch.entries()) pending.resolve(results[i]!);
  }
}
