import type { Sql } from "../platform/database";

/** Channels the E2E module notifies on (payload: a seed id or an environment label). */
export const SEED_CHANNEL = "e2e_seed_done";
export const LOCK_CHANNEL = "e2e_lock_changed";

/**
 * Waits until `check` returns a value, re-checking whenever a NOTIFY on `channel` carries
 * `payload`. Checks once right after LISTEN is in place, so a notification sent before the wait
 * began is never missed. Undefined on timeout. No polling: every re-check follows a notification.
 */
export async function waitForNotification<T>(
  sql: Sql,
  channel: string,
  payload: string,
  check: () => Promise<T | undefined>,
  timeoutMs: number,
): Promise<T | undefined> {
  let wake: (() => void) | undefined;
  let pending = false;
  const listener = await sql.listen(channel, (value) => {
    if (value !== payload) return;
    pending = true;
    wake?.();
  });
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      pending = false;
      const found = await check();
      if (found !== undefined) return found;
      const remaining = deadline - Date.now();
      if (remaining <= 0) return undefined;
      if (!pending) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, remaining);
        });
        clearTimeout(timer);
        wake = undefined;
      }
    }
  } finally {
    await listener.unlisten().catch(() => {});
  }
}
