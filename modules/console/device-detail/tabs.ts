/**
 * The tabs of the device page, in order. A feature adds a tab (remote access, terminal) with one
 * entry here: its id and label, a loader for the data its panel needs (run only when the tab is
 * open) and the panel; the page, its tab bar and its routes need no change.
 */
import type { PageContext } from "../../../ui/layout";
import { FleetPanel, loadFleetTab } from "../../fleet/service";
import { RemoteAccessSlot } from "../../remote-access/service";
import { loadTerminalTab, TerminalPanel } from "../../terminal/service";
import { loadCommandsTab, loadScriptsTab, loadTelemetryTab, type TabLoadInput } from "./loaders";
import { CommandsPanel } from "./panels/commands";
import { OverviewPanel } from "./panels/overview";
import { ScriptsPanel } from "./panels/scripts";
import { TelemetryPanel } from "./panels/telemetry";
import type { DeviceDetailProps } from "./props";

export interface DeviceTabDefinition {
  id: string;
  label: string;
  load?(input: TabLoadInput): Promise<Partial<DeviceDetailProps>>;
  Panel(input: { ctx: PageContext; props: DeviceDetailProps }): JSX.Element;
}

export const DEVICE_TABS: readonly DeviceTabDefinition[] = [
  { id: "overview", label: "Overview", Panel: OverviewPanel },
  { id: "telemetry", label: "Telemetry", load: loadTelemetryTab, Panel: TelemetryPanel },
  { id: "scripts", label: "Scripts", load: loadScriptsTab, Panel: ScriptsPanel },
  { id: "commands", label: "Commands", load: loadCommandsTab, Panel: CommandsPanel },
  {
    id: "tags",
    label: "Tags & notes",
    load: loadFleetTab,
    Panel: ({ ctx, props }) =>
      FleetPanel({
        device: props.device,
        data: props.fleet ?? { tags: [] },
        canOperate: props.canManage,
        csrfToken: ctx.csrfToken,
      }),
  },
  {
    id: "remote",
    label: "Remote access",
    // The slot loads its panel itself and keeps the lease alive while the page is open.
    Panel: ({ ctx, props }) => RemoteAccessSlot({ deviceId: props.device.id, csrfToken: ctx.csrfToken }),
  },
  {
    id: "terminal",
    label: "Terminal",
    load: loadTerminalTab,
    Panel: ({ ctx, props }) =>
      TerminalPanel({
        deviceId: props.device.id,
        online: props.device.online && props.device.approvalStatus === "approved",
        canOperate: props.canManage,
        isAdmin: ctx.principal?.role === "admin",
        csrfToken: ctx.csrfToken,
        data: props.terminal ?? { hostKey: undefined, sessions: [], more: false },
      }),
  },
];

/** The tab with this id; the first (overview) for anything else. */
export function deviceTab(id: unknown): DeviceTabDefinition {
  return DEVICE_TABS.find((tab) => tab.id === id) ?? DEVICE_TABS[0]!;
}
