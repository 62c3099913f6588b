import { type Clock, type ClockTimer, clockSleep, type TimerCallback } from "../../shared/clock";

interface Entry {
  due: number;
  /** The delay or period the code asked for. */
  ms: number;
  fn: TimerCallback;
  every: number | undefined;
  real: ReturnType<typeof setTimeout> | undefined;
}

/** What the test clocks share: timers and sleeps come down to one `add` (an interval has a period). */
abstract class ManualClock implements Clock {
  abstract now(): number;
  protected abstract add(fn: TimerCallback, ms: number, every: number | undefined): ClockTimer;

  setTimeout(fn: TimerCallback, ms: number): ClockTimer {
    return this.add(fn, ms, undefined);
  }

  setInterval(fn: TimerCallback, ms: number): ClockTimer {
    return this.add(fn, ms, Math.max(1, ms));
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return clockSleep(this, ms, signal);
  }
}

/**
 * A clock a test moves forward: `advance(ms)` runs at once every timer due within `ms` (in order) and
 * moves `now()` on by `ms`. By default time also passes as usual and timers fire in real time too, so
 * an app started on this clock (`startTestApp`) behaves as on the system clock when a test does not
 * advance it. `{ frozen: true }`: only `advance` moves time (exact boundaries, for a service under test).
 */
export class TestClock extends ManualClock {
  private offset = 0;
  private readonly entries = new Set<Entry>();
  private readonly frozenAt: number | undefined;

  constructor(options: { frozen?: boolean } = {}) {
    super();
    this.frozenAt = options.frozen ? Date.now() : undefined;
  }

  now(): number {
    return (this.frozenAt ?? Date.now()) + this.offset;
  }

  /** Timers waiting (a test can check that code armed one before advancing). */
  get pending(): number {
    return this.entries.size;
  }

  /** Timers and intervals of exactly `ms` waiting: a test waits for the code to arm its own, then advances. */
  armed(ms: number): number {
    return [...this.entries].filter((e) => e.ms === ms).length;
  }

  /**
   * Moves time on by `ms`, firing what falls due (an interval once per period, at most 1,000 firings),
   * then waits for the work the callbacks started: the promises they returned (a database write after
   * a grace period), up to `settleMs`, and a few macrotask turns for what they did not return.
   */
  async advance(ms: number, settleMs = 10_000): Promise<void> {
    const target = this.now() + ms;
    const started: Promise<unknown>[] = [];
    for (let fired = 0; fired < 1000; fired++) {
      const next = [...this.entries].filter((e) => e.due <= target).sort((a, b) => a.due - b.due)[0];
      if (!next) break;
      this.offset += Math.max(0, next.due - this.now());
      const result = this.fire(next);
      if (result instanceof Promise) started.push(result.catch(() => {}));
      await Bun.sleep(0);
    }
    this.offset += Math.max(0, target - this.now());
    if (started.length > 0) {
      let bound: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([Promise.all(started), new Promise((done) => (bound = setTimeout(done, settleMs)))]);
      clearTimeout(bound);
    }
    for (let i = 0; i < 5; i++) await Bun.sleep(1);
  }

  protected add(fn: TimerCallback, ms: number, every: number | undefined): ClockTimer {
    const entry: Entry = { due: this.now() + Math.max(0, ms), ms, fn, every, real: undefined };
    this.entries.add(entry);
    this.arm(entry);
    return {
      clear: () => {
        clearTimeout(entry.real);
        this.entries.delete(entry);
      },
    };
  }

  private arm(entry: Entry) {
    clearTimeout(entry.real);
    if (this.frozenAt !== undefined) return;
    entry.real = setTimeout(() => this.fire(entry), Math.max(0, entry.due - this.now()));
  }

  /** Runs the timer's callback and returns what it returned (a promise, for timers that start work). */
  private fire(entry: Entry): unknown {
    if (!this.entries.has(entry)) return undefined;
    if (entry.every === undefined) {
      clearTimeout(entry.real);
      this.entries.delete(entry);
    } else {
      entry.due = Math.max(entry.due + entry.every, this.now() + 1);
      this.arm(entry);
    }
    return entry.fn();
  }
}

/**
 * Settles `work` (which has its own timeout, e.g. a page's waitForSelector) while moving `clock` on by
 * `stepMs` every `everyMs` of real time: a page waiting for what a timer of the app does next (the live
 * hub's re-count) sees it at once, without the app's timer being shortened.
 */
export async function advancing<T>(
  clock: TestClock,
  stepMs: number,
  work: Promise<T>,
  everyMs = 250,
): Promise<T> {
  let settled = false;
  const done = work.finally(() => {
    settled = true;
  });
  // Bounded by `work`'s own timeout, and by 1,000 steps.
  for (let i = 0; i < 1000 && !settled; i++) {
    await clock.advance(stepMs);
    await Promise.race([done.catch(() => {}), Bun.sleep(everyMs)]);
  }
  return done;
}

/**
 * A clock on which waiting takes no real time: the earliest timer fires on the next turn of the event
 * loop and moves now() to when it was due. For one loop under test whose waits are all its own (the
 * agent's poll loop against a fake server that holds its answers on this clock too): the time the loop
 * measures is exactly what it chose to wait, however loaded the machine.
 */
export class InstantClock extends ManualClock {
  private time = Date.now();
  private readonly entries = new Set<{ due: number; fn: TimerCallback; every: number | undefined }>();
  private scheduled = false;

  now(): number {
    return this.time;
  }

  protected add(fn: TimerCallback, ms: number, every: number | undefined): ClockTimer {
    const entry = { due: this.time + Math.max(0, ms), fn, every };
    this.entries.add(entry);
    this.schedule();
    return { clear: () => this.entries.delete(entry) };
  }

  private schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    setTimeout(() => {
      this.scheduled = false;
      const next = [...this.entries].sort((a, b) => a.due - b.due)[0];
      if (!next) return;
      this.time = Math.max(this.time, next.due);
      if (next.every === undefined) this.entries.delete(next);
      else next.due += next.every;
      next.fn();
      if (this.entries.size > 0) this.schedule();
    }, 0);
  }
}
