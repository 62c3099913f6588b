import type { Database } from "../platform/database";
import { isUuid } from "../platform/json-body";
import type { Logger } from "../platform/logger";
import type { E2EConfig } from "./config";
import { clearStaleLocks } from "./locks";
import { LOCK_CHANNEL } from "./notify";
import { cancelRun } from "./results";

/** Deletes runs with their results and logs; a deleted active run's lock goes with it. */
export async function deleteRuns(database: Database, logger: Logger, ids: string[]): Promise<number> {
  const valid = ids.filter(isUuid);
  if (valid.length === 0) return 0;
  const deleted = await database.sql.begin(async (tx) => {
    const rows = await tx<{ environment_label: string }[]>`
      delete from e2e_runs where id = any(${valid}::uuid[]) returning environment_label`;
    for (const env of new Set(rows.map((r) => r.environment_label)))
      await tx`select pg_notify(${LOCK_CHANNEL}, ${env})`;
    return rows.length;
  });
  logger.info({ count: deleted }, "E2E runs deleted");
  return deleted;
}

export interface RetentionOutcome {
  runsDeleted: number;
  logsPruned: number;
  bytesPruned: number;
  seedRunsDeleted: number;
}

/**
 * Retention, never touching an active run: deletes runs older than `days`, then the oldest runs
 * beyond `maxRuns`, then discards the oldest log contents until stored logs fit `maxLogBytes`
 * (those logs answer 410 afterwards).
 */
export async function pruneRetention(database: Database, e2e: E2EConfig): Promise<RetentionOutcome> {
  const { days, maxRuns, maxLogBytes } = e2e.retention;
  return database.sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(7401501)`; // one pruner at a time across workers
    const byAge = await tx`
      delete from e2e_runs where status not in ('queued', 'running') and started_at < now() - make_interval(days => ${days})`;
    const byCount = await tx`
      delete from e2e_runs where id in (
        select id from e2e_runs where status not in ('queued', 'running')
        order by started_at asc, id asc
        limit greatest((select count(*) from e2e_runs) - ${maxRuns}, 0))`;
    const pruned = await tx<{ bytes: number }[]>`
      update e2e_journey_logs l set content = null, pruned_at = now()
      from (
        select run_id, journey_id, active,
          sum(bytes) over (order by uploaded_at desc, run_id desc, journey_id desc) as cumulative
        from (
          select l2.run_id, l2.journey_id, l2.bytes, l2.uploaded_at, r.status in ('queued', 'running') as active
          from e2e_journey_logs l2 join e2e_runs r on r.id = l2.run_id
          where l2.content is not null
        ) s
      ) ranked
      where l.run_id = ranked.run_id and l.journey_id = ranked.journey_id
        and ranked.cumulative > ${maxLogBytes} and not ranked.active
      returning l.bytes`;
    const seeds =
      await tx`delete from e2e_seed_runs where created_at < now() - make_interval(days => ${days})`;
    return {
      runsDeleted: byAge.count + byCount.count,
      logsPruned: pruned.length,
      bytesPruned: pruned.reduce((sum, row) => sum + Number(row.bytes), 0),
      seedRunsDeleted: seeds.count,
    };
  });
}

/** Cancels runs still active after run_timeout_s and drops locks nobody holds any more. */
export async function cancelStaleRuns(database: Database, e2e: E2EConfig, logger: Logger) {
  const stale = await database.sql<{ id: string }[]>`
    select id::text as id from e2e_runs
    where status in ('queued', 'running') and started_at < now() - make_interval(secs => ${e2e.runTimeoutS})`;
  for (const run of stale) await cancelRun(database, logger, run.id);
  const locks = await clearStaleLocks(database.sql, e2e);
  return { runsCancelled: stale.length, locksCleared: locks };
}
