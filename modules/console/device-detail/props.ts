// What the device page renders: the device, and the data of the open tab (loaded by its tab's loader).
import type { Command, UnmatchedResult } from "../../commands/service";
import type { Device } from "../../devices/service";
import type { FleetTabData } from "../../fleet/service";
import type { ChartData, Gauges, TelemetryEvent } from "../../telemetry/service";
import type { TerminalTabData } from "../../terminal/service";

export const TELEMETRY_RANGES = [
  { id: "1h", label: "1 hour", seconds: 3600 },
  { id: "6h", label: "6 hours", seconds: 6 * 3600 },
  { id: "24h", label: "24 hours", seconds: 24 * 3600 },
  { id: "7d", label: "7 days", seconds: 7 * 86400 },
  { id: "30d", label: "30 days", seconds: 30 * 86400 },
] as const;
export type TelemetryRange = (typeof TELEMETRY_RANGES)[number]["id"];

export interface ChartGroup {
  script: string;
  labels: string[];
  data: ChartData;
}

export interface ReportedScript {
  name: string;
  status: string;
  validation: string | undefined;
  durationMs: number | undefined;
  error: string | undefined;
}

export interface ListedScript {
  name: string;
  version: string;
  path: string;
  active: boolean;
}

/** The Scripts tab's "Run a script once" form as posted, with what was refused. */
export interface RunOnceFormState {
  values?: { script?: string; name?: string; timeout_seconds?: string };
  errors?: Partial<Record<"script" | "name" | "timeout_seconds", string>>;
}

export interface DeviceDetailProps {
  device: Device;
  name: string;
  /** Id of the open tab (see tabs.ts). */
  tab: string;
  canManage: boolean;
  onlineWindowSeconds: number;
  /** The console's address, for the install line a pre-authorised device waits for. */
  baseUrl: string;
  /** A claim token just reissued (shown this once). */
  newClaimToken?: string;
  latest: TelemetryEvent | undefined;
  gauges: Gauges;
  telemetry?: {
    range: TelemetryRange;
    groups: ChartGroup[];
    events: number;
    /** Labels of every numeric field of the latest payload (chart order). */
    available: string[];
    /** Labels of the fields charted. */
    shown: string[];
    /** Whether the operator picked the fields (else the first maxFields are shown). */
    picked: boolean;
    maxFields: number;
  };
  scripts?: {
    reported: ReportedScript[];
    listing: { command: Command; scripts: ListedScript[] } | undefined;
    pendingList: Command | undefined;
    values?: { text?: string };
    errors?: Partial<Record<"text" | "form", string>>;
    runOnce?: RunOnceFormState;
  };
  commands?: {
    commands: Command[];
    next: string | undefined;
    cursor: string | undefined;
    /** Results the device posted for no command (newest first) and how many there are. */
    unmatched: { results: UnmatchedResult[]; total: number };
  };
  terminal?: TerminalTabData;
  fleet?: FleetTabData;
}
