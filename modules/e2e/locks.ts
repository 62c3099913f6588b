import type { Sql } from "../platform/database";
import type { E2EConfig } from "./config";
import { LOCK_CHANNEL } from "./notify";

/** Locks that no longer protect anything: a creator that died before persisting, or a finished run. */
export async function clearStaleLocks(sql: Sql, e2e: E2EConfig, environment?: string): Promise<number> {
  const staleAfterS =
    Math.max(...[...e2e.environments.values()].map((e) => e.seedTimeoutS), 1) + e2e.seedPickupGraceS + 60;
  const rows = await sql<{ environment_label: string }[]>`
    delete from e2e_environment_locks l
    where (${environment ?? null}::text is null or l.environment_label = ${environment ?? null})
      and ((l.run_id is null and l.acquired_at < now() - make_interval(secs => ${staleAfterS}))
        or exists (select 1 from e2e_runs r where r.id = l.run_id and r.status not in ('queued', 'running')))
    returning environment_label`;
  for (const row of rows) await sql`select pg_notify(${LOCK_CHANNEL}, ${row.environment_label})`;
  return rows.length;
}

export async function acquireLock(
  sql: Sql,
  environment: string,
  holder: string,
  key: string | null,
  runnerId: string,
) {
  const rows = await sql`
    insert into e2e_environment_locks (environment_label, holder, idempotency_key, runner_id)
    values (${environment}, ${holder}, ${key}, ${runnerId})
    on conflict (environment_label) do nothing
    returning holder`;
  return rows.length === 1;
}

export async function releaseLockHeldBy(sql: Sql, environment: string, holder: string) {
  await sql.begin(async (tx) => {
    await tx`delete from e2e_environment_locks where environment_label = ${environment} and holder = ${holder}`;
    await tx`select pg_notify(${LOCK_CHANNEL}, ${environment})`;
  });
}
