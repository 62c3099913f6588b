import type { PendingQuery, Row } from "postgres";
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
  /**
   * The fleet query language (modules/fleet, docs/fleet.md) for the device lists of the devices feature,
   * which cannot import it (fleet builds on devices): `?q=` and `?view=` as one condition over
   * `devices d` (undefined: no query). Throws 400 invalid_query or 404 view_not_found.
   */
  /** After a registration that declared labels (modules/fleet keeps them queryable as tags). */
  labelsDeclared?(deviceId: string, labels: Record<string, string>): Promise<void>;
  /** Operators' tags of these devices, by id (modules/fleet; the JSON:API device resource shows them). */
  deviceTags?(ids: string[]): Promise<Map<string, { key: string; value: string }[]>>;
  /** What uses a saved view as its scope (alert rules, reports): modules/fleet refuses to delete it then. */
  viewUsers?(viewId: string): Promise<{ kind: string; id: string; name: string }[]>;
  deviceQuery?(
    input: { q?: string; view?: string },
    onlineWindowSeconds: number,
  ): Promise<{ condition: PendingQuery<Row[]> | undefined; viewName: string | undefined }>;
}
