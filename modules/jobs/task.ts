import type { Config } from "../platform/config";
import type { Database } from "../platform/database";
import type { Logger } from "../platform/logger";

/** What every durable job receives besides its payload. */
export interface JobContext {
  config: Config;
  database: Database;
  logger: Logger;
}

export interface JobDefinition<Payload = unknown> {
  /** graphile-worker task identifier, snake_case. */
  identifier: string;
  /** One line for the Jobs page. */
  description: string;
  run(payload: Payload, context: JobContext): Promise<void>;
}

export function defineJob<Payload>(definition: JobDefinition<Payload>): JobDefinition<Payload> {
  return definition;
}
