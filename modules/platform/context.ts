import type { PendingQuery, Row } from "postgres";
import type { accessPlugin } from "./access";
import type { Config } from "./config";
import type { Database } from "./database";
import type { Logger } from "./logger";

/** What the composition root hands every module's routes. */
export interface AppContext {
  config: Config;
  database: Database;
  logger: Logger;
  access: ReturnType<typeof accessPlugin>;
  /** True while this process runs the job worker (for readiness). */
  workerRunning(): boolean;
  /** Called after each accepted heartbeat, never awaited (alerts wake their evaluation job). */
  heartbeatAccepted?(): void;
  /**
   * The fleet query language (modules/fleet, docs/fleet.md) for the device lists of the devices feature,
   * which cannot import it (fleet builds on devices): `?q=` and `?view=` as one condition over
   * `devices d` (undefined: no query). Throws 400 invalid_query or 404 view_not_found.
   */
  /** After a registration that declared labels (modules/fleet keeps them queryable as tags). */
  labelsDeclared?(deviceId: string, labels: Record<string, string>): Promise<void>;
  deviceQuery?(
    input: { q?: string; view?: string },
    onlineWindowSeconds: number,
  ): Promise<{ condition: PendingQuery<Row[]> | undefined; viewName: string | undefined }>;
}
