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
}
