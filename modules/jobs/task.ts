import type { Services } from "../../services";

/** What every durable job receives besides its payload: the process's services (services.ts). */
export type JobContext = Services;

export interface JobDefinition<Payload = unknown> {
  /** graphile-worker task identifier, snake_case. */
  identifier: string;
  /** One line for the Jobs page. */
  description: string;
  run(payload: Payload, context: JobContext): Promise<void>;
}

/** A recurring job, in UTC cron syntax (graphile-worker crontab). */
export interface JobSchedule {
  task: string;
  cron: string;
  label: string;
}

/**
 * Every task and schedule Outpost knows. The task files in the top-level `jobs/` call into features;
 * app.ts hands this catalog to the runner and the Jobs page, so this module never imports them.
 */
export interface JobCatalog {
  jobs: JobDefinition<never>[];
  schedules: JobSchedule[];
}

export function defineJob<Payload>(definition: JobDefinition<Payload>): JobDefinition<Payload> {
  return definition;
}
