import type { JobCatalog, JobDefinition, JobSchedule } from "../modules/jobs/service";
import alertsEvaluate from "./alerts-evaluate";
import alertsNotify from "./alerts-notify";
import alertsOffline from "./alerts-offline";
import alertsRetention from "./alerts-retention";
import auditRetention from "./audit-retention";
import commandRetention from "./command-retention";
import deviceSightingsPrune from "./device-sightings-prune";
import e2eRetention from "./e2e-retention";
import e2eSeed from "./e2e-seed";
import e2eStaleRuns from "./e2e-stale-runs";
import expireCommands from "./expire-commands";
import pruneSessions from "./prune-sessions";
import remoteAccessSweep from "./remote-access-sweep";
import rolloutDrive from "./rollout-drive";
import rolloutsSweep from "./rollouts-sweep";
import telemetryPartitions from "./telemetry-partitions";
import telemetryRetention from "./telemetry-retention";
import telemetryRollup from "./telemetry-rollup";
import telemetrySchemasPrune from "./telemetry-schemas-prune";
import terminalRetention from "./terminal-retention";

/** Every durable job Outpost knows. Add new tasks here (one file per task in this folder). */
const JOBS: JobDefinition<never>[] = [
  pruneSessions as JobDefinition<never>,
  e2eSeed as JobDefinition<never>,
  e2eRetention as JobDefinition<never>,
  e2eStaleRuns as JobDefinition<never>,
  expireCommands as JobDefinition<never>,
  commandRetention as JobDefinition<never>,
  telemetryPartitions as JobDefinition<never>,
  telemetryRetention as JobDefinition<never>,
  telemetryRollup as JobDefinition<never>,
  telemetrySchemasPrune as JobDefinition<never>,
  deviceSightingsPrune as JobDefinition<never>,
  remoteAccessSweep as JobDefinition<never>,
  alertsEvaluate as JobDefinition<never>,
  alertsOffline as JobDefinition<never>,
  alertsNotify as JobDefinition<never>,
  alertsRetention as JobDefinition<never>,
  auditRetention as JobDefinition<never>,
  terminalRetention as JobDefinition<never>,
  rolloutDrive as JobDefinition<never>,
  rolloutsSweep as JobDefinition<never>,
];

/** Recurring jobs, in UTC cron syntax (graphile-worker crontab). */
const SCHEDULES: JobSchedule[] = [
  { task: "prune_sessions", cron: "17 * * * *", label: "hourly at :17" },
  { task: "e2e_retention", cron: "*/15 * * * *", label: "every 15 minutes" },
  { task: "e2e_cancel_stale_runs", cron: "* * * * *", label: "every minute" },
  { task: "expire_commands", cron: "* * * * *", label: "every minute" },
  { task: "telemetry_partitions", cron: "23 * * * *", label: "hourly at :23" },
  { task: "telemetry_rollup", cron: "* * * * *", label: "every minute" },
  { task: "device_sightings_prune", cron: "* * * * *", label: "every minute" },
  { task: "telemetry_retention", cron: "41 3 * * *", label: "daily at 03:41" },
  { task: "telemetry_schemas_prune", cron: "47 3 * * *", label: "daily at 03:47" },
  { task: "command_retention", cron: "53 3 * * *", label: "daily at 03:53" },
  { task: "remote_access_sweep", cron: "* * * * *", label: "every 30 seconds" },
  { task: "alerts_evaluate", cron: "* * * * *", label: "every minute (heartbeats wake it sooner)" },
  { task: "alerts_offline", cron: "* * * * *", label: "every minute" },
  { task: "alerts_retention", cron: "11 4 * * *", label: "daily at 04:11" },
  { task: "audit_retention", cron: "17 4 * * *", label: "daily at 04:17" },
  { task: "terminal_retention", cron: "*/10 * * * *", label: "every 10 minutes" },
  { task: "rollouts_sweep", cron: "* * * * *", label: "every minute" },
];

export const JOB_CATALOG: JobCatalog = { jobs: JOBS, schedules: SCHEDULES };
