import type { JobDefinition } from "../modules/jobs/task";
import pruneSessions from "./prune-sessions";

/** Every durable job Outpost knows. Add new tasks here (one file per task in this folder). */
export const JOBS: JobDefinition<never>[] = [pruneSessions as JobDefinition<never>];

/** Recurring jobs, in UTC cron syntax (graphile-worker crontab). */
export const SCHEDULES: { task: string; cron: string; label: string }[] = [
  { task: "prune_sessions", cron: "17 * * * *", label: "hourly at :17" },
];

export const CRONTAB = SCHEDULES.map((s) => `${s.cron} ${s.task} ?max=1`).join("\n");
