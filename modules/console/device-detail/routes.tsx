import { Elysia } from "elysia";
import { approvalAction, noteAudit } from "../../audit/service";
import { cancelCommand, getCommand } from "../../commands/service";
import {
  approveDevices,
  type Device,
  deleteDevice,
  reissueClaimToken,
  rejectDevices,
  resolveIdentityConflict,
  revokeDevice,
} from "../../devices/service";
import type { AppContext } from "../../platform/context";
import { formList } from "../../platform/schemas";
import { endDeviceLeases } from "../../remote-access/service";
import { deviceDetailContext } from "./context";
import { tabUrl } from "./links";
import {
  CommandPathParams,
  DeviceButtonForm,
  DevicePageQuery,
  DevicePathParams,
  IdentityForm,
} from "./model";
import { DeviceDetailPage } from "./page";
import { DeviceLive } from "./panels/header";

/** The device page (`/devices/:id`, its tabs and live part) and the actions it posts. */
export function deviceDetailRoutes(ctx: AppContext) {
  const { pageContext, htmlPage, redirectWithFlash, sql, detailProps, loadDevice } = deviceDetailContext(ctx);

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
