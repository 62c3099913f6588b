import type { Services } from "../../services";
import type { accessPlugin } from "./access";

/**
 * What the composition root hands every module's routes: the process's services (config, database,
 * clock, settings, live hub, device waits…, built once by `createServices` in services.ts) and the
 * web role's own parts.
 */
export interface AppContext extends Services {
  access: ReturnType<typeof accessPlugin>;
  /** True while this process runs the job worker (for readiness). */
  workerRunning(): boolean;
  /** Called after each accepted heartbeat, never awaited (alerts wake their evaluation job). */
  heartbeatAccepted?(): void;
}
