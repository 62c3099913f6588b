/**
 * Capped exponential backoff with ±25 % jitter: `min(cap, base · 2^(attempt-1))`, jittered, never above cap.
 * `attempt` starts at 1. `random` is injectable for tests.
 */
export function backoffDelayMs(
  attempt: number,
  baseMs: number,
  capMs: number,
  random: () => number = Math.random,
) {
  const exp = Math.min(capMs, baseMs * 2 ** Math.max(0, Math.min(attempt - 1, 30)));
  const jittered = exp * (0.75 + random() * 0.5);
  return Math.max(1, Math.min(capMs, Math.round(jittered)));
}

/** Sleep that resolves early (with `false`) when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
