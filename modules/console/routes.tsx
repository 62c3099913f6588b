import { Elysia } from "elysia";
import { redirectWithFlash } from "../../ui/flash";
import type { PageContext } from "../../ui/layout";
import { htmlPage, pageContext } from "../../ui/page";
import { DashboardPage } from "../../ui/pages/dashboard";
import {
  type ChartGroup,
  DEVICE_TABS,
  DeviceDetailPage,
  type DeviceDetailProps,
  DeviceLive,
  type DeviceTab,
  TELEMETRY_RANGES,
  type TelemetryRange,
} from "../../ui/pages/device-detail";
import { DeviceNewPage, type DeviceNewProps } from "../../ui/pages/device-new";
import { type DeviceQuery, DeviceResults, DevicesPage, type DevicesPageProps } from "../../ui/pages/devices";
import { countOpenAlerts } from "../alerts/lifecycle";
import { cancelCommand, getCommand, listCommands, queueCommand } from "../commands/service";
import {
  countConsoleDevices,
  listConsoleDevices,
  preRegisterDevice,
  recentDevices,
} from "../devices/console-queries";
import {
  approveDevices,
  type Device,
  deleteDevice,
  fleetCounts,
  getDevice,
  rejectDevices,
} from "../devices/service";
import type { Principal } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import { deviceSettings } from "../settings/service";
import {
  deviceChartData,
  fleetActivity,
  gaugesOf,
  MAX_CHART_FIELDS,
  numericFields,
} from "../telemetry/series";
import { latestTelemetry } from "../telemetry/service";
import {
  devicesReturn,
  displayName,
  listedScripts,
  parseDeviceQuery,
  reportedScripts,
  scriptName,
  text,
} from "./view-model";

const PAGE_SIZE = 50;
const ACTIVITY_CACHE_MS = 30_000;
const SCRIPT_MAX_BYTES = 256 * 1024;

type Body = Record<string, unknown>;

function canManage(principal: Principal | undefined): boolean {
  return principal?.role === "operator" || principal?.role === "admin";
}

function actor(principal: Principal | undefined): string | undefined {
  if (!principal) return undefined;
  return principal.kind === "session" ? principal.email : `token ${principal.name}`;
}

/** Pages of the operator console: dashboard, device list, add device, device detail. */
export function consoleRoutes(ctx: AppContext) {
  const { config, database } = ctx;
  const sql = database.sql;
  let activity: { at: number; value: Awaited<ReturnType<typeof fleetActivity>> } | undefined;

  async function cachedActivity() {
    if (!activity || Date.now() - activity.at > ACTIVITY_CACHE_MS) {
      const value = await fleetActivity(sql);
      // An empty chart is not worth keeping: the first heartbeats should show at once.
      activity = { at: value.devices.some((n) => n > 0) ? Date.now() : 0, value };
    }
    return activity.value;
  }

  async function devicesProps(
    principal: Principal | undefined,
    query: DeviceQuery,
  ): Promise<DevicesPageProps> {
    const { onlineWindowSeconds } = await deviceSettings(config);
    const filters = {
      search: query.search,
      approvalStatus: query.approval_status,
      connectivityStatus: query.connectivity_status,
      product: query.product,
      onlineWindowSeconds,
    };
    const filtered = Boolean(
      query.search || query.approval_status || query.connectivity_status || query.product,
    );
    const [list, fleet, total] = await Promise.all([
      listConsoleDevices(sql, {
        ...filters,
        sort: query.sort,
        order: query.order,
        limit: PAGE_SIZE,
        after: query.after,
        before: query.before,
      }),
      countConsoleDevices(sql, { onlineWindowSeconds }),
      filtered ? countConsoleDevices(sql, filters) : undefined,
    ]);
    return {
      query,
      devices: list.devices,
      next: list.next,
      prev: list.prev,
      total: total ?? fleet,
      fleetTotal: fleet,
      canManage: canManage(principal),
      pageSize: PAGE_SIZE,
    };
  }

  async function detailProps(
    principal: Principal | undefined,
    device: Device,
    tab: DeviceTab,
    query: Record<string, unknown>,
  ): Promise<DeviceDetailProps> {
    const latest = await latestTelemetry(sql, device.id);
    const props: DeviceDetailProps = {
      device,
      name: displayName(device),
      tab,
      canManage: canManage(principal),
      onlineWindowSeconds: (await deviceSettings(config)).onlineWindowSeconds,
      latest,
      gauges: gaugesOf(latest?.payload),
    };
    if (tab === "telemetry") {
      const range = (TELEMETRY_RANGES.find((r) => r.id === query.range) ?? TELEMETRY_RANGES[2]) as {
        id: TelemetryRange;
        seconds: number;
      };
      const to = new Date();
      const from = new Date(to.getTime() - range.seconds * 1000);
      // One small chart per numeric field (units differ even within a script), at most 12: the
      // ones picked (?field=cpu.usage_pct&field=...), else the first 12 (percentages first).
      const rank = (label: string) => (/_pct$|percent/.test(label) ? 0 : /load_1m$/.test(label) ? 1 : 2);
      const available = numericFields(latest?.payload)
        .map((field, index) => ({ field, index }))
        .sort((a, b) => rank(a.field.label) - rank(b.field.label) || a.index - b.index)
        .map((entry) => entry.field);
      const requested = new Set(
        (Array.isArray(query.field) ? query.field : [query.field]).filter(
          (v): v is string => typeof v === "string" && v !== "",
        ),
      );
      const picked = available.filter((f) => requested.has(f.label));
      const fields = (picked.length > 0 ? picked : available).slice(0, MAX_CHART_FIELDS);
      const data = await deviceChartData(
        sql,
        device.id,
        fields.map((f) => f.path),
        from,
        to,
      );
      const groups: ChartGroup[] = fields.map((field, i) => ({
        script: field.label,
        labels: [field.label.slice(field.label.indexOf(".") + 1)],
        data: { ...data, series: [data.series[i] ?? []] },
      }));
      props.telemetry = {
        range: range.id,
        groups,
        events: data.events,
        available: available.map((f) => f.label),
        shown: fields.map((f) => f.label),
        picked: picked.length > 0,
        maxFields: MAX_CHART_FIELDS,
      };
    } else if (tab === "scripts") {
      const { commands } = await listCommands(sql, { deviceId: device.id, limit: 100 });
      const lists = commands.filter((c) => c.type === "list_scripts");
      const answered = lists.find((c) => c.status === "succeeded" && listedScripts(c));
      props.scripts = {
        reported: reportedScripts(latest),
        listing: answered ? { command: answered, scripts: listedScripts(answered)! } : undefined,
        pendingList: lists.find(
          (c) =>
            (c.status === "queued" || c.status === "delivered") &&
            (!answered || c.queuedAt.getTime() >= answered.queuedAt.getTime()),
        ),
      };
    } else if (tab === "commands") {
      const cursor = typeof query.cursor === "string" && query.cursor !== "" ? query.cursor : undefined;
      const page = await listCommands(sql, { deviceId: device.id, limit: 50, cursor });
      props.commands = { commands: page.commands, next: page.nextCursor, cursor };
    }
    return props;
  }

  async function loadDevice(id: string): Promise<Device> {
    const { onlineWindowSeconds } = await deviceSettings(config);
    const device = isUuid(id) ? await getDevice(sql, id, { onlineWindowSeconds }) : undefined;
    if (!device)
      throw new AppError(404, "device_not_found", "This device does not exist, or it was deleted.");
    return device;
  }

  function tabOf(value: unknown): DeviceTab {
    return (DEVICE_TABS.find((t) => t.id === value)?.id ?? "overview") as DeviceTab;
  }

  const deviceUrl = (id: string, tab?: string) =>
    tab && tab !== "overview" ? `/devices/${id}?tab=${tab}` : `/devices/${id}`;

  async function renderNew(page: PageContext, props: DeviceNewProps, status = 200) {
    return htmlPage(page, <DeviceNewPage ctx={page} props={props} />, status);
  }

  async function queue(
    device: Device,
    principal: Principal | undefined,
    input: { type: string; args?: string[]; payload?: Record<string, unknown> },
  ) {
    const { commandTtlSeconds } = await deviceSettings(config);
    return queueCommand(sql, {
      deviceId: device.id,
      type: input.type,
      args: input.args,
      payload: input.payload,
      ttlSeconds: commandTtlSeconds,
      queuedBy: actor(principal),
    });
  }

  return new Elysia({ name: "console" })
    .use(ctx.access)
    .get(
      "/",
      async ({ request, principal }) => {
        const page = pageContext(request, principal, config.secretKey);
        const { onlineWindowSeconds } = await deviceSettings(config);
        const [counts, recent, chart, alerts] = await Promise.all([
          fleetCounts(sql, onlineWindowSeconds),
          recentDevices(sql, 8, onlineWindowSeconds),
          cachedActivity(),
          countOpenAlerts(sql),
        ]);
        return htmlPage(
          page,
          <DashboardPage
            ctx={page}
            props={{
              counts: { ...counts, alerts },
              recent,
              activity: chart,
              canManage: canManage(principal),
              onlineWindowMinutes: Math.round((onlineWindowSeconds / 60) * 100) / 100,
            }}
          />,
        );
      },
      { access: "viewer" },
    )
    .get(
      "/devices",
      async ({ request, principal, query }) => {
        const page = pageContext(request, principal, config.secretKey);
        let parsed = parseDeviceQuery(query);
        let props: DevicesPageProps;
        try {
          props = await devicesProps(principal, parsed);
        } catch (error) {
          // A stale page link (cursor) falls back to the first page instead of an error.
          if (!(error instanceof AppError) || error.status !== 400) throw error;
          parsed = { ...parsed, after: undefined, before: undefined };
          props = await devicesProps(principal, parsed);
        }
        if (
          request.headers.get("hx-request") === "true" &&
          request.headers.get("hx-target") === "device-results"
        ) {
          return htmlPage({ flash: undefined }, <DeviceResults ctx={page} props={props} />);
        }
        return htmlPage(page, <DevicesPage ctx={page} props={props} />);
      },
      { access: "viewer" },
    )
    .get(
      "/devices/new",
      ({ request, principal }) => renderNew(pageContext(request, principal, config.secretKey), {}),
      { access: "operator" },
    )
    .post(
      "/devices",
      async ({ request, principal, body }) => {
        const form = (body ?? {}) as Body;
        const values = {
          mac_address: text(form.mac_address).trim(),
          product_name: text(form.product_name).trim(),
          name: text(form.name).trim(),
          approved: ["on", "true", "1"].includes(text(form.approved)),
        };
        try {
          const created = await preRegisterDevice(sql, {
            macAddress: values.mac_address,
            productName: values.product_name,
            name: values.name,
            approved: values.approved,
          });
          return redirectWithFlash(`/devices/${created.id}`, {
            kind: "success",
            text: values.approved
              ? `Device ${created.macAddress} added and approved: its first registration is accepted at once.`
              : `Device ${created.macAddress} added. It waits for approval when it registers.`,
          });
        } catch (error) {
          if (!(error instanceof AppError) || (error.status !== 400 && error.status !== 409)) throw error;
          const field = (error.details as { field?: string } | undefined)?.field;
          const key = field === "product_name" || field === "name" ? field : "mac_address";
          const message =
            key === "mac_address" && error.status === 400
              ? "Enter a MAC address such as AA:BB:CC:DD:EE:FF (colons, dashes or none)."
              : error.message;
          const page = pageContext(request, principal, config.secretKey);
          return renderNew(page, { values, errors: { [key]: message } }, error.status);
        }
      },
      { access: "operator" },
    )
    .post(
      "/devices/bulk",
      async ({ body }) => {
        const form = (body ?? {}) as Body;
        const back = devicesReturn(form.return_to);
        const raw = form.ids;
        const ids = (Array.isArray(raw) ? raw : typeof raw === "string" ? raw.split(",") : []).filter(
          (id): id is string => typeof id === "string" && id.trim() !== "",
        );
        const action = text(form.action);
        if (action !== "approve" && action !== "reject") {
          return redirectWithFlash(back, { kind: "error", text: "Choose Approve or Reject." });
        }
        if (ids.length === 0) {
          return redirectWithFlash(back, { kind: "error", text: "Select at least one device first." });
        }
        if (ids.length > 1000) {
          return redirectWithFlash(back, { kind: "error", text: "Select at most 1000 devices at once." });
        }
        const changed = await (action === "approve" ? approveDevices : rejectDevices)(sql, ids);
        const verb = action === "approve" ? "approved" : "rejected";
        const unchanged = new Set(ids.map((id) => id.toLowerCase())).size - changed.length;
        const text1 = `${changed.length} ${changed.length === 1 ? "device" : "devices"} ${verb}.`;
        const text2 = unchanged > 0 ? ` ${unchanged} not pending, left unchanged.` : "";
        return redirectWithFlash(back, {
          kind: changed.length > 0 ? "success" : "info",
          text: text1 + text2,
        });
      },
      { access: "operator" },
    )
    .get(
      "/devices/:id",
      async ({ request, principal, params, query }) => {
        const page = pageContext(request, principal, config.secretKey);
        const device = await loadDevice(params.id);
        // Repeated parameters (the chart field picker) are read from the URL as a list.
        const fields = new URL(request.url).searchParams.getAll("field");
        const props = await detailProps(principal, device, tabOf(query.tab), { ...query, field: fields });
        return htmlPage(page, <DeviceDetailPage ctx={page} props={props} />);
      },
      { access: "viewer" },
    )
    .get(
      "/devices/:id/live",
      async ({ request, principal, params }) => {
        const page = pageContext(request, principal, config.secretKey);
        const device = await loadDevice(params.id);
        const props = await detailProps(principal, device, "overview", {});
        return htmlPage({ flash: undefined }, <DeviceLive ctx={page} props={props} />);
      },
      { access: "viewer" },
    )
    .post(
      "/devices/:id/approve",
      async ({ params }) => {
        const device = await loadDevice(params.id);
        const changed = await approveDevices(sql, [device.id]);
        return redirectWithFlash(
          `/devices/${device.id}`,
          changed.length > 0
            ? { kind: "success", text: "Device approved. It receives its API token when it next registers." }
            : { kind: "info", text: `The device is ${device.approvalStatus} already; nothing changed.` },
        );
      },
      { access: "operator" },
    )
    .post(
      "/devices/:id/reject",
      async ({ params }) => {
        const device = await loadDevice(params.id);
        const changed = await rejectDevices(sql, [device.id]);
        return redirectWithFlash(
          `/devices/${device.id}`,
          changed.length > 0
            ? { kind: "success", text: "Device rejected." }
            : { kind: "info", text: `The device is ${device.approvalStatus} already; nothing changed.` },
        );
      },
      { access: "operator" },
    )
    .post(
      "/devices/:id/delete",
      async ({ params }) => {
        const device = await loadDevice(params.id);
        await deleteDevice(sql, device.id);
        return redirectWithFlash("/devices", {
          kind: "success",
          text: `Device ${displayName(device)} (${device.macAddress}) deleted.`,
        });
      },
      { access: "operator" },
    )
    .post(
      "/devices/:id/commands",
      async ({ params, principal, body }) => {
        const device = await loadDevice(params.id);
        const form = (body ?? {}) as Body;
        const type = text(form.type);
        if (type === "list_scripts") {
          await queue(device, principal, { type });
          return redirectWithFlash(deviceUrl(device.id, "scripts"), {
            kind: "success",
            text: device.online
              ? "Asked the device for its scripts: the answer appears here after its next heartbeat."
              : "Queued: the device is offline and answers when it checks in again.",
          });
        }
        if (type === "remove_script") {
          const name = text(form.name).trim();
          if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/.test(name)) {
            return redirectWithFlash(deviceUrl(device.id, "scripts"), {
              kind: "error",
              text: "That script name is not valid.",
            });
          }
          await queue(device, principal, { type, args: [name], payload: { name } });
          return redirectWithFlash(deviceUrl(device.id, "commands"), {
            kind: "success",
            text: `Removal of "${name}" queued for the device's next heartbeat.`,
          });
        }
        return redirectWithFlash(deviceUrl(device.id, "scripts"), {
          kind: "error",
          text: "Only list_scripts and remove_script can be queued from here.",
        });
      },
      { access: "operator" },
    )
    .post(
      "/devices/:id/scripts",
      async ({ request, params, principal, body }) => {
        const device = await loadDevice(params.id);
        const form = (body ?? {}) as Body;
        let source = text(form.text);
        const file = form.file;
        if (file instanceof Blob && file.size > 0) {
          if (file.size > SCRIPT_MAX_BYTES) source = "\u0000too-large";
          else source = await file.text();
        }
        let error: string | undefined;
        const name = scriptName(source);
        if (source === "\u0000too-large" || Buffer.byteLength(source) > SCRIPT_MAX_BYTES) {
          error = "The script is larger than 256 KiB.";
          source = "";
        } else if (source.trim() === "") error = "Choose a script file or paste the script.";
        else if (!name)
          error = "The script needs a front-matter block with its name: /*--- name: my-script ... ---*/";
        if (error) {
          const page = pageContext(request, principal, config.secretKey);
          const props = await detailProps(principal, device, "scripts", {});
          props.scripts!.values = { text: source };
          props.scripts!.errors = { text: error };
          return htmlPage(page, <DeviceDetailPage ctx={page} props={props} />, 400);
        }
        await queue(device, principal, {
          type: "install_script",
          payload: { name: name!, data: source, content_type: "application/javascript" },
        });
        return redirectWithFlash(deviceUrl(device.id, "commands"), {
          kind: "success",
          text: `Install of "${name}" queued: the device installs it on its next heartbeat.`,
        });
      },
      { access: "operator" },
    )
    .post(
      "/devices/:id/commands/:commandId/cancel",
      async ({ params }) => {
        const device = await loadDevice(params.id);
        const command = await getCommand(sql, params.commandId);
        const outcome = command?.deviceId === device.id ? await cancelCommand(sql, command.id) : "not_found";
        return redirectWithFlash(
          deviceUrl(device.id, "commands"),
          outcome === "cancelled"
            ? { kind: "success", text: "Command cancelled: it will not be delivered." }
            : outcome === "not_queued"
              ? { kind: "error", text: "Too late to cancel: the device has already picked the command up." }
              : { kind: "error", text: "That command no longer exists." },
        );
      },
      { access: "operator" },
    );
}
