// What the device page's routes (routes.tsx, script-routes.tsx) share.
import { consolePages } from "../../../ui/page";
import { noteAudit } from "../../audit/service";
import { queueCommand } from "../../commands/service";
import { type Device, getDevice } from "../../devices/service";
import { canOperate, type Principal, principalLabel } from "../../platform/access";
import type { AppContext } from "../../platform/context";
import { AppError } from "../../platform/errors";
import { isUuid } from "../../platform/json-body";
import { gaugesOf, latestTelemetry } from "../../telemetry/service";
import type { DeviceDetailProps } from "./props";
import { deviceTab } from "./tabs";

/**
 * What the device page's routes share: the page's props for a tab, the device (404 when it is gone) and
 * queueing a command with its audit note.
 */
export function deviceDetailContext(ctx: AppContext) {
  const pages = consolePages(ctx.config);
  const { config, database } = ctx;
  const sql = database.sql;

  async function detailProps(
    principal: Principal | undefined,
    device: Device,
    tabId: unknown,
    query: Record<string, unknown>,
  ): Promise<DeviceDetailProps> {
    const tab = deviceTab(tabId);
    const latest = await latestTelemetry(sql, device.id);
    const props: DeviceDetailProps = {
      device,
      name: device.name,
      tab: tab.id,
      canManage: canOperate(principal),
      onlineWindowSeconds: (await ctx.settings.device()).onlineWindowSeconds,
      baseUrl: config.baseUrl,
      latest,
      gauges: gaugesOf(latest?.payload),
    };
    return { ...props, ...(await tab.load?.({ sql, device, latest, query })) };
  }

  async function loadDevice(id: string): Promise<Device> {
    const { onlineWindowSeconds } = await ctx.settings.device();
    const device = isUuid(id) ? await getDevice(sql, id, { onlineWindowSeconds }) : undefined;
    if (!device)
      throw new AppError(404, "device_not_found", "This device does not exist, or it was deleted.");
    return device;
  }

  /** Queues a command for `device`; the audit event names it (`command:<id>`, its type and device). */
  async function queue(
    request: Request,
    device: Device,
    principal: Principal | undefined,
    input: { type: string; args?: string[]; payload?: Record<string, unknown> },
    details: Record<string, unknown> = {},
  ) {
    const { commandTtlSeconds } = await ctx.settings.device();
    const command = await queueCommand(sql, {
      deviceId: device.id,
      type: input.type,
      args: input.args,
      payload: input.payload,
      ttlSeconds: commandTtlSeconds,
      queuedBy: principalLabel(principal),
    });
    noteAudit(request, {
      target: `command:${command.id}`,
      details: { type: command.type, device_id: device.id, ...details },
    });
    return command;
  }

  return { ...pages, sql, detailProps, loadDevice, queue };
}
