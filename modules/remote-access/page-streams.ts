// The count of a console lease's open page streams, kept in PostgreSQL (remote_access_page_streams) so
// every web process sees every other's: a closing tab ends the lease only when no tab anywhere still
// holds it. This process refreshes its own rows; a killed process's rows expire and stop counting.
import type { Sql } from "../platform/database";

/** A row counts this long after its last refresh… */
export const PAGE_STREAM_TTL_SECONDS = 30;
/** …and this process refreshes its rows this often. */
export const REFRESH_MS = 10_000;

/** This process's open page streams: `open` adds one to a lease (if it is still active), `close` removes it. */
export function pageStreams(sql: Sql) {
  const mine = new Set<string>();
  let timer: ReturnType<typeof setInterval> | undefined;

  async function refresh() {
    if (mine.size > 0) {
      await sql`update remote_access_page_streams
        set expires_at = now() + make_interval(secs => ${PAGE_STREAM_TTL_SECONDS})
        where id = any(${[...mine]}::uuid[])`;
    }
    // Rows of processes that died with their streams open.
    await sql`delete from remote_access_page_streams where expires_at < now()`;
  }

  return {
    /** Counts a stream for the lease; undefined when the lease is no longer active (nothing to hold). */
    async open(leaseId: string): Promise<string | undefined> {
      const id = Bun.randomUUIDv7();
      // FOR SHARE: waits for a lease being ended right now, then sees it ended.
      const rows = await sql`
        insert into remote_access_page_streams (id, lease_id, expires_at)
        select ${id}::uuid, l.id, now() + make_interval(secs => ${PAGE_STREAM_TTL_SECONDS})
        from remote_access_leases l
        where l.id = ${leaseId}::uuid and l.ended_at is null and l.expires_at > now()
        for share of l
        returning id`;
      if (rows.length === 0) return undefined;
      mine.add(id);
      timer ??= setInterval(() => refresh().catch(() => {}), REFRESH_MS);
      timer.unref?.();
      return id;
    },
    /** Stops counting a stream (idempotent: a stream may be stopped by its abort and its cancel). */
    async close(id: string): Promise<void> {
      mine.delete(id);
      if (mine.size === 0 && timer) {
        clearInterval(timer);
        timer = undefined;
      }
      await sql`delete from remote_access_page_streams where id = ${id}::uuid`;
    },
  };
}
