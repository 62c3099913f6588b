import { Elysia } from "elysia";
import { consolePages } from "../../../ui/page";
import { approvalAction, noteAudit } from "../../audit/service";
import {
  type Command,
  cancelCommand,
  commandScript,
  getCommand,
  installableScript,
  queueCommand,
  SCRIPT_MAX_BYTES,
} from "../../commands/service";
import {
  approveDevices,
  type Device,
  deleteDevice,
  getDevice,
  reissueClaimToken,
  rejectDevices,
  resolveIdentityConflict,
  revokeDevice,
} from "../../devices/service";
import { canOperate, type Principal, principalLabel } from "../../platform/access";
import type { AppContext } from "../../platform/context";
import { AppError } from "../../platform/errors";
import { isUuid } from "../../platform/json-body";
import { formList } from "../../platform/schemas";
import { endDeviceLeases } from "../../remote-access/service";
import { gaugesOf, latestTelemetry } from "../../telemetry/service";
import { tabUrl } from "./links";
import {
  CommandPathParams,
  DeviceButtonForm,
  DevicePageQuery,
  DevicePathParams,
  IdentityForm,
  RunOnceForm,
  ScriptCommandForm,
  ScriptForm,
} from "./model";
import { DeviceDetailPage } from "./page";
import { DeviceLive } from "./panels/header";
import type { DeviceDetailProps } from "./props";
import { deviceTab } from "./tabs";

/** The device page (`/devices/:id`, its tabs and live part) and the actions it posts. */
export function deviceDetailRoutes(ctx: AppContext) {
  const { pageContext, htmlPage, redirectWithFlash } = consolePages(ctx.config);
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

  /** Notes an approval change of `device` (from what it was to `to`), or that nothing changed. */
  function noteApproval(request: Request, device: Device, to: string, changed: boolean) {
    if (!changed) return noteAudit(request, { details: { unchanged: device.approvalStatus } });
    noteAudit(request, {
      action: approvalAction(device.approvalStatus, to),
      details: { changes: { approval_status: { from: device.approvalStatus, to } } },
    });
  }

  return new Elysia({ name: "device-detail-page" })
    .use(ctx.access)
    .get(
      "/devices/:id",
      async ({ request, principal, params, query }) => {
        const page = pageContext(request, principal);
        const device = await loadDevice(params.id);
        const props = await detailProps(principal, device, query.tab, {
          ...query,
          field: formList(query.field),
        });
        return htmlPage(page, <DeviceDetailPage ctx={page} props={props} />);
      },
      { access: "viewer", params: DevicePathParams, query: DevicePageQuery },
    )
    .get(
      "/devices/:id/live",
      async ({ request, principal, params }) => {
        const page = pageContext(request, principal);
        const device = await loadDevice(params.id);
        const props = await detailProps(principal, device, "overview", {});
        return htmlPage({ flash: undefined }, <DeviceLive ctx={page} props={props} />);
      },
      { access: "viewer", params: DevicePathParams },
    )
    .post(
      "/devices/:id/approve",
      async ({ params, request }) => {
        const device = await loadDevice(params.id);
        const changed = await approveDevices(sql, [device.id]);
        noteApproval(request, device, "approved", changed.length > 0);
        return redirectWithFlash(
          `/devices/${device.id}`,
          changed.length > 0
            ? {
                kind: "success",
                text: "Device approved. A waiting agent picks up its API token at its next attempt, within about 10 seconds.",
              }
            : { kind: "info", text: `The device is ${device.approvalStatus} already; nothing changed.` },
        );
      },
      { access: "operator", params: DevicePathParams, body: DeviceButtonForm },
    )
    .post(
      "/devices/:id/reject",
      async ({ params, request }) => {
        const device = await loadDevice(params.id);
        const changed = await rejectDevices(sql, [device.id]);
        noteApproval(request, device, "rejected", changed.length > 0);
        return redirectWithFlash(
          `/devices/${device.id}`,
          changed.length > 0
            ? { kind: "success", text: "Device rejected." }
            : { kind: "info", text: `The device is ${device.approvalStatus} already; nothing changed.` },
        );
      },
      { access: "operator", params: DevicePathParams, body: DeviceButtonForm },
    )
    .post(
      "/devices/:id/revoke",
      async ({ params, request }) => {
        const device = await loadDevice(params.id);
        if (device.approvalStatus !== "approved")
          return redirectWithFlash(`/devices/${device.id}`, {
            kind: "info",
            text: `The device is ${device.approvalStatus}; only an approved device can be revoked.`,
          });
        await revokeDevice(sql, device.id, await ctx.settings.device());
        const ended = await endDeviceLeases(sql, device.id, "revoked");
        noteApproval(request, device, "rejected", true);
        noteAudit(request, { details: { leases_closed: ended } });
        return redirectWithFlash(`/devices/${device.id}`, {
          kind: "success",
          text: `Device revoked: its token no longer works${ended > 0 ? " and its remote access was closed" : ""}. It stays rejected until you delete it.`,
        });
      },
      { access: "operator", params: DevicePathParams, body: DeviceButtonForm },
    )
    .post(
      "/devices/:id/identity",
      async ({ params, body, request }) => {
        const device = await loadDevice(params.id);
        const { decision } = body;
        if (decision !== "accept" && decision !== "reject")
          return redirectWithFlash(`/devices/${device.id}`, {
            kind: "error",
            text: "Choose Accept or Reject.",
          });
        const resolved = await resolveIdentityConflict(sql, device.id, decision, body.fingerprint ?? "");
        noteAudit(request, { details: { resolved } });
        return redirectWithFlash(
          `/devices/${device.id}`,
          resolved === "none"
            ? { kind: "info", text: "There is no identity conflict to decide any more." }
            : resolved === "changed"
              ? {
                  kind: "error",
                  text: "The identity claim changed since the page was shown (decided meanwhile, or another one is pending): nothing was changed. Check the claim below and decide again.",
                }
              : decision === "accept"
                ? {
                    kind: "success",
                    text: "New identity accepted: the old one's token no longer works; the device gets a new token at its next registration.",
                  }
                : {
                    kind: "success",
                    text: "Identity claim rejected: the device keeps its identity, and the next claim will be shown.",
                  },
        );
      },
      { access: "operator", params: DevicePathParams, body: IdentityForm },
    )
    .post(
      "/devices/:id/claim-token",
      async ({ request, principal, params }) => {
        const device = await loadDevice(params.id);
        if (!device.awaitingClaim)
          return redirectWithFlash(`/devices/${device.id}`, {
            kind: "info",
            text: "This device has registered with its claim token already: its own secret identifies it now.",
          });
        const newClaimToken = await reissueClaimToken(sql, device.id);
        // The page itself, not a redirect: the token is shown this once and never travels in a cookie.
        const page = pageContext(request, principal);
        const props = await detailProps(principal, await loadDevice(device.id), "overview", {});
        return htmlPage(page, <DeviceDetailPage ctx={page} props={{ ...props, newClaimToken }} />);
      },
      { access: "operator", params: DevicePathParams, body: DeviceButtonForm },
    )
    .post(
      "/devices/:id/delete",
      async ({ params, request }) => {
        const device = await loadDevice(params.id);
        await deleteDevice(sql, device.id);
        noteAudit(request, { details: { mac_address: device.macAddress, name: device.name } });
        return redirectWithFlash("/devices", {
          kind: "success",
          text: `Device ${device.name} (${device.macAddress}) deleted.`,
        });
      },
      { access: "operator", params: DevicePathParams, body: DeviceButtonForm },
    )
    .post(
      "/devices/:id/commands",
      async ({ params, principal, body, request }) => {
        const device = await loadDevice(params.id);
        const { type } = body;
        if (type === "list_scripts") {
          await queue(request, device, principal, { type });
          return redirectWithFlash(tabUrl(device.id, "scripts"), {
            kind: "success",
            text: device.online
              ? "Asked the device for its scripts: the answer appears here after its next heartbeat."
              : "Queued: the device is offline and answers when it checks in again.",
          });
        }
        if (type === "remove_script") {
          const name = (body.name ?? "").trim();
          try {
            await queue(request, device, principal, { type, args: [name], payload: { name } }, { name });
          } catch (refused) {
            if (!(refused instanceof AppError) || refused.status !== 400) throw refused;
            return redirectWithFlash(tabUrl(device.id, "scripts"), {
              kind: "error",
              text: "That script name is not valid.",
            });
          }
          return redirectWithFlash(tabUrl(device.id, "commands"), {
            kind: "success",
            text: `Removal of "${name}" queued for the device's next heartbeat.`,
          });
        }
        return redirectWithFlash(tabUrl(device.id, "scripts"), {
          kind: "error",
          text: "Only list_scripts and remove_script can be queued from here.",
        });
      },
      { access: "operator", params: DevicePathParams, body: ScriptCommandForm },
    )
    .post(
      "/devices/:id/scripts",
      async ({ request, params, principal, body }) => {
        const device = await loadDevice(params.id);
        const file = body.file && body.file.size > 0 ? body.file : undefined;
        let source = body.text ?? "";
        let error: string | undefined;
        let script: { name: string; source: string } | undefined;
        if (!file && source.trim() === "") error = "Choose a script file or paste the script.";
        else {
          try {
            script = await installableScript(file ?? source);
          } catch (refused) {
            if (!(refused instanceof AppError)) throw refused;
            error = refused.message;
            // Shown again for correction, unless it is too large to.
            source =
              (file?.size ?? Buffer.byteLength(source)) > SCRIPT_MAX_BYTES
                ? ""
                : file
                  ? await file.text()
                  : source;
          }
        }
        if (!script) {
          // Sent by htmx, the form is swapped in place: the address stays the device page, so a
          // reload does not post the script again.
          const page = pageContext(request, principal);
          const props = await detailProps(principal, device, "scripts", {});
          props.scripts!.values = { text: source };
          props.scripts!.errors = { text: error };
          return htmlPage(page, <DeviceDetailPage ctx={page} props={props} />, 422);
        }
        await queue(
          request,
          device,
          principal,
          {
            type: "install_script",
            payload: { name: script.name, data: script.source, content_type: "application/javascript" },
          },
          { name: script.name },
        );
        return redirectWithFlash(
          tabUrl(device.id, "commands"),
          {
            kind: "success",
            text: `Install of "${script.name}" queued: the device installs it on its next heartbeat.`,
          },
          request,
        );
      },
      { access: "operator", params: DevicePathParams, body: ScriptForm },
    )
    .post(
      "/devices/:id/run-once",
      async ({ request, params, principal, body }) => {
        const device = await loadDevice(params.id);
        const values = {
          script: body.script ?? "",
          name: body.name ?? "",
          timeout_seconds: body.timeout_seconds ?? "",
        };
        const timeout = values.timeout_seconds.trim();
        let command: Command;
        try {
          command = await queue(request, device, principal, {
            type: "run_script",
            payload: {
              data: values.script,
              name: values.name.trim() || undefined,
              timeout_seconds: timeout === "" ? undefined : Number(timeout),
            },
          });
        } catch (refused) {
          if (!(refused instanceof AppError) || refused.status >= 500) throw refused;
          // As the install form: swapped in place by htmx, the script kept for correction.
          const field = String((refused.details as { field?: string } | undefined)?.field ?? "");
          const key = field.endsWith("name")
            ? "name"
            : field.endsWith("timeout_seconds")
              ? "timeout_seconds"
              : "script";
          const page = pageContext(request, principal);
          const props = await detailProps(principal, device, "scripts", {});
          props.scripts!.runOnce = { values, errors: { [key]: refused.message } };
          return htmlPage(page, <DeviceDetailPage ctx={page} props={props} />, 422);
        }
        const what = commandScript(command) ? `"${commandScript(command)}"` : "The script";
        return redirectWithFlash(
          tabUrl(device.id, "commands"),
          {
            kind: "success",
            text: `${what} is queued to run once: its output appears here after the device's next heartbeat.`,
          },
          request,
        );
      },
      { access: "operator", params: DevicePathParams, body: RunOnceForm },
    )
    .post(
      "/devices/:id/commands/:commandId/cancel",
      async ({ params, request }) => {
        const device = await loadDevice(params.id);
        const command = await getCommand(sql, params.commandId);
        if (command?.deviceId === device.id)
          noteAudit(request, { details: { type: command.type, device_id: device.id } });
        const outcome = command?.deviceId === device.id ? await cancelCommand(sql, command.id) : "not_found";
        return redirectWithFlash(
          tabUrl(device.id, "commands"),
          outcome === "cancelled"
            ? { kind: "success", text: "Command cancelled: it will not be delivered." }
            : outcome === "not_queued"
              ? { kind: "error", text: "Too late to cancel: the device has already picked the command up." }
              : { kind: "error", text: "That command no longer exists." },
        );
      },
      { access: "operator", params: CommandPathParams, body: DeviceButtonForm },
    );
}
