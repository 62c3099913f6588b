// Rate limits of the device API: one 429 shape, fixed windows counted in PostgreSQL.
import type { Sql } from "../platform/database";
import { AppError } from "../platform/errors";

/** Window of every device API limit (heartbeats, registrations, command results and payloads). */
export const DEVICE_API_RATE_WINDOW_SECONDS = 60;

/**
 * The one 429 of the device API: `rate_limited`, `details: {limit, window_seconds}` and
 * `Retry-After` = seconds until the fixed window that started at `windowStartedMs` ends.
 */
export function rateLimited(what: string, limit: number, windowSeconds: number, windowStartedMs: number) {
  const retryAfter = Math.max(1, Math.ceil((windowStartedMs + windowSeconds * 1000 - Date.now()) / 1000));
  return new AppError(
    429,
    "rate_limited",
    `${what} rate limit exceeded`,
    { limit, window_seconds: windowSeconds },
    { "Retry-After": String(Math.min(retryAfter, windowSeconds)) },
  );
}

/**
 * Counts one request against a fixed-window limit kept in PostgreSQL under `key` — the heartbeat's
 * scheme (same window arithmetic, refused requests not counted, exact across web processes: the
 * upsert locks the counter row), for limits that have no device row to live on. Throws
 * `rateLimited()` when the window's `limit` is used up.
 */
export async function consumeRateLimit(
  sql: Sql,
  input: { key: string; limit: number; what: string; windowSeconds?: number },
): Promise<void> {
  const window = input.windowSeconds ?? DEVICE_API_RATE_WINDOW_SECONDS;
  const counted = await sql`
    insert into device_api_rate_limits as r (key, window_started_at, count) values (${input.key}, now(), 1)
    on conflict (key) do update set
      window_started_at = case when r.window_started_at > now() - make_interval(secs => ${window})
        then r.window_started_at else now() end,
      count = case when r.window_started_at > now() - make_interval(secs => ${window})
        then r.count + 1 else 1 end
    where r.window_started_at <= now() - make_interval(secs => ${window}) or r.count < ${input.limit}
    returning 1`;
  if (counted.length > 0) return;
  const [row] = await sql<{ window_started_at: Date }[]>`
    select window_started_at from device_api_rate_limits where key = ${input.key}`;
  const started = row ? row.window_started_at.getTime() : Date.now();
  throw rateLimited(input.what, input.limit, window, started);
}

/** Deletes counters whose window ended an hour ago (they limit nothing any more); returns how many. */
export async function pruneRateCounters(sql: Sql): Promise<number> {
  const deleted =
    await sql`delete from device_api_rate_limits where window_started_at < now() - interval '1 hour'`;
  return deleted.count;
}
