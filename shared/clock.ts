/**
 * Time as the code sees it. Code with caches or timers takes a Clock (the server's from the app context,
 * the agent's where a part needs one) instead of calling Date.now()/setTimeout itself, so tests can move
 * time forward instead of sleeping (tests/helpers/clock.ts). Production uses `systemClock`.
 */
export interface ClockTimer {
  clear(): void;
}

/**
 * A timer's callback. It may return the work it starts (a promise, which never rejects): the system
 * clock ignores it, a test clock waits for it after moving time on, so a test sees the work done.
 */
export type TimerCallback = () => unknown;

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once after `ms`. */
  setTimeout(fn: TimerCallback, ms: number): ClockTimer;
  /** Calls `fn` every `ms` until cleared. */
  setInterval(fn: TimerCallback, ms: number): ClockTimer;
  /** Resolves after `ms`, or at once when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Resolves after `ms` of `clock`'s time, or when `signal` aborts (shared by every Clock). */
export function clockSleep(
  clock: Pick<Clock, "setTimeout">,
  ms: number,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      timer.clear();
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = clock.setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const handle = setTimeout(fn, ms);
    return { clear: () => clearTimeout(handle) };
  },
  setInterval(fn, ms) {
    const handle = setInterval(fn, ms);
    return { clear: () => clearInterval(handle) };
  },
  sleep: (ms, signal) => clockSleep(systemClock, ms, signal),
};

/**
 * The system clock whose now() only moves forward (a wall-clock correction, e.g. NTP setting the time
 * of a device without a real-time clock, does not move it): for code that measures intervals with it.
 */
export const monotonicClock: Clock = {
  ...systemClock,
  now: () => performance.timeOrigin + performance.now(),
};
