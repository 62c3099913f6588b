/**
 * Group commit for concurrent requests: items submitted while earlier batches are running are
 * gathered and run together, bounded by count (`maxSize`) and by time (an item waits at most for the
 * batches already running, or, with `lingerMs`, that long for company when items come steadily; a lone
 * item of a quiet stream runs at once).
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
  /**
   * With nothing running, waiting items start a batch once `overlap.at` (or `maxSize`) of them wait, or
   * once the oldest has waited `lingerMs`, but only while items come at least two per `lingerMs` on
   * average: a steady trickle (500 heartbeats/s) then shares batches instead of paying a batch's fixed
   * cost per item, and a lone item of a quiet stream still runs at once. Without it, they start at once.
   */
  lingerMs?: number;
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
  private lingerTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the last item came, and the mean time between items (moving average), in ms. */
  private lastArrival = Number.NEGATIVE_INFINITY;
  private meanGapMs = Number.POSITIVE_INFINITY;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly options: KeyedBatcherOptions,
  ) {}

  submit(key: string, item: I): Promise<O> {
    const at = performance.now();
    // A gap of a second counts as a second: one long pause does not poison the mean for minutes.
    const gap = Math.min(at - this.lastArrival, 1000);
    this.meanGapMs = this.meanGapMs === Number.POSITIVE_INFINITY ? gap : 0.9 * this.meanGapMs + 0.1 * gap;
    this.lastArrival = at;
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ key, item, at, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.options.maxInFlight) {
      if (this.inFlight > 0 && this.waitsForNextBatch()) return;
      if (this.inFlight === 0 && this.lingers()) return;
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

  /** True when the waiting items should wait a little for company, nothing running (see `lingerMs`). */
  private lingers(): boolean {
    const { lingerMs, overlap, maxSize } = this.options;
    const oldest = this.queue[0];
    if (!lingerMs || !oldest || this.meanGapMs > lingerMs / 2) return false;
    if (this.queue.length >= Math.min(overlap?.at ?? maxSize, maxSize)) return false;
    const waitedMs = performance.now() - oldest.at;
    if (waitedMs >= lingerMs) return false;
    this.lingerTimer ??= setTimeout(() => {
      this.lingerTimer = undefined;
      this.pump();
    }, lingerMs - waitedMs);
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
