import { csvResponse, keysetBatches } from "../platform/csv";
import type { Sql } from "../platform/database";
import type { RolloutJson } from "./model";
import { listTargets } from "./queries";

const COLUMNS = [
  "device_id",
  "device_name",
  "wave",
  "state",
  "started_at",
  "finished_at",
  "error",
  "output",
  "command_id",
];

/** A rollout's devices and results, streamed 500 at a time. */
export function rolloutCsv(sql: Sql, rollout: RolloutJson): Response {
  const batches = keysetBatches(
    async (cursor: string | undefined) => {
      const page = await listTargets(sql, rollout.id, { cursor, limit: 500 });
      return { items: page.targets, next: page.nextCursor ?? undefined };
    },
    (t) => [
      t.device_id,
      t.device_name,
      t.wave,
      t.state,
      t.started_at,
      t.finished_at,
      t.error,
      t.output === null || t.output === undefined ? null : JSON.stringify(t.output),
      t.command_id,
    ],
  );
  return csvResponse(`rollout-${rollout.name}-${rollout.id.slice(0, 8)}.csv`, COLUMNS, batches);
}
