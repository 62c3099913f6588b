import path from "node:path";
import { Elysia } from "elysia";
import type { ClockTimer } from "../../shared/clock";
import { consolePages } from "../../ui/page";
import { noteAudit } from "../audit/service";
import { requireFreshFactor } from "../operators/service";
import type { Principal } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError, notFound } from "../platform/errors";
import { panelState } from "./console";
import { RemoteAccessPanel } from "./device-tab";
import { ConsoleLeaseParams, LeaseForm, LiveQuery, PanelButtonForm } from "./model";
import { pageStreams } from "./page-streams";
import { deviceWebUrl, holderOf } from "./routes";
import {
  activeLeases,
  CONSOLE_LEASE_SECONDS,
  endDeviceLeases,
  endUnwatchedLease,
  leaseIsActive,
  renewLease,
} from "./service";
import { issueTicket } from "./tickets";

const PANEL_JS = path.join(import.meta.dir, "static/panel.js");
/** The live stream renews the page's lease this often (it lapses CONSOLE_LEASE_SECONDS after the last). */
export const RENEW_MS = 30_000;
/** …and sends the panel's state this often. */
export const STATE_MS = 3000;

const encoder = new TextEncoder();
/** Who closed remote access, as the panel and the lease record name them. */
const actorName = (principal: Principal) => holderOf(principal).holder;

/** The device page's Remote access panel: lease by visit, renewed by a live stream, ended on close. */
export function remoteAccessConsoleRoutes(ctx: AppContext) {
  const { pageContext, redirectWithFlash } = consolePages(ctx.config);
  const { clock, config, database } = ctx;
  // A page whose stream dropped, or that said it closes, leaves its lease this long to another page.
  const graceMs = config.remoteAccessPageGraceSeconds * 1000;
  const sql = database.sql;
  /** Open live streams per lease, counted in PostgreSQL so every web process sees every other's. */
  const streams = pageStreams(sql);
  /** After the grace period, the lease ends unless a page (on any web process) holds it by then. */
  const endAfterGrace = (deviceId: string, leaseId: string) =>
    clock.setTimeout(() => endUnwatchedLease(sql, deviceId, leaseId).catch(() => {}), graceMs);

  async function state(
    request: Request,
    principal: Parameters<typeof panelState>[1]["principal"],
    deviceId: string,
    open: boolean,
    leaseId?: string,
    reopen = false,
  ) {
    const settings = await ctx.settings.device();
    const props = await panelState(sql, {
      deviceId,
      principal,
      open,
      leaseId,
      reopen,
      maxMinutes: config.remoteAccessMaxMinutes,
      onlineWindowSeconds: settings.onlineWindowSeconds,
      csrfToken: pageContext(request, principal).csrfToken,
    });
    if (!props) throw notFound("No device with this id", "device_not_found");
    return props;
  }

  return new Elysia({ name: "remote-access-console" })
    .use(ctx.access)
    .get(
      "/remote-access/panel.js",
      () =>
        new Response(Bun.file(PANEL_JS), { headers: { "content-type": "text/javascript; charset=utf-8" } }),
      { access: "public" },
    )
    .post(
      "/devices/:id/remote-access/panel",
      async ({ params, principal, request }) => {
        const props = await state(request, principal!, params.id, true);
        noteAudit(request, { details: { lease_id: props.myLease?.id ?? null } });
        return new Response(await (<RemoteAccessPanel props={props} />), {
          headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
        });
      },
      { access: "viewer", params: ConsoleLeaseParams, body: PanelButtonForm },
    )
    .get(
      "/devices/:id/remote-access/live",
      ({ params, principal, query, request, server }) => {
        server?.timeout?.(request, 0);
        const leaseId = query.lease || undefined;
        let timers: ClockTimer[] = [];
        let held: Promise<string | undefined> | undefined;
        let stopped = false;
        // Runs on the request's abort and on the stream's cancel, often both: only the first counts (a
        // second used to take another tab's stream off the count, ending the lease under that tab).
        const stop = () => {
          if (stopped) return;
          stopped = true;
          for (const t of timers) t.clear();
          timers = [];
          if (!held || !leaseId) return;
          held
            .then(async (streamId) => {
              if (!streamId) return;
              await streams.close(streamId);
              endAfterGrace(params.id, leaseId);
            })
            .catch(() => {});
        };
        const stream = new ReadableStream<Uint8Array>({
          async start(controller) {
            let open = true;
            const send = async () => {
              if (!open) return;
              try {
                const props = await state(request, principal!, params.id, false, leaseId);
                const html = await (<RemoteAccessPanel props={props} />);
                if (open)
                  controller.enqueue(encoder.encode(`event: state\ndata: ${JSON.stringify({ html })}\n\n`));
              } catch {
                // the next tick tries again
              }
            };
            controller.enqueue(encoder.encode("retry: 3000\n: connected\n\n"));
            // Only the operator whose page opened the lease keeps it alive (and ends it by leaving).
            const owned =
              leaseId !== undefined &&
              principal?.kind === "session" &&
              (await activeLeases(sql, params.id)).some(
                (l) => l.id === leaseId && l.ownerKind === "console" && l.operatorId === principal.operatorId,
              );
            if (stopped) return; // the page went away while this looked its lease up
            if (owned && leaseId) {
              held = streams.open(leaseId);
              timers.push(
                clock.setInterval(
                  () => renewLease(sql, leaseId, CONSOLE_LEASE_SECONDS).catch(() => {}),
                  RENEW_MS,
                ),
              );
            }
            timers.push(clock.setInterval(send, STATE_MS));
            const abort = () => {
              open = false;
              stop();
            };
            request.signal.addEventListener("abort", abort);
            if (request.signal.aborted) abort();
          },
          cancel() {
            stop();
          },
        });
        return new Response(stream, {
          headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store" },
        });
      },
      { access: "viewer", params: ConsoleLeaseParams, query: LiveQuery },
    )
    .post(
      "/devices/:id/remote-access/open",
      async ({ body, params, principal, set }) => {
        const leaseId = body.lease_id ?? "";
        if (!(await leaseIsActive(sql, params.id, leaseId))) {
          throw notFound("This remote-access lease ended. Reload the device page.", "lease_not_found");
        }
        try {
          await requireFreshFactor(database.db, principal, `/devices/${params.id}?tab=remote`);
        } catch (error) {
          if (!(error instanceof AppError) || error.code !== "fresh_factor_required") throw error;
          // A form in a new tab: that tab asks for the factor, then shows the device page again.
          set.status = 303;
          set.headers.location = (error.details as { verify_url: string }).verify_url;
          return "";
        }
        const ticket = await issueTicket(sql, {
          leaseId,
          deviceId: params.id,
          operatorId: principal?.kind === "session" ? principal.operatorId : null,
        });
        set.status = 303;
        set.headers.location = `${deviceWebUrl(config, params.id)}.outpost/auth?ticket=${encodeURIComponent(ticket)}`;
        return "";
      },
      { access: "operator", params: ConsoleLeaseParams, body: LeaseForm },
    )
    .post(
      "/devices/:id/remote-access/leave",
      ({ body, params, set }) => {
        // The page went away, maybe only to another tab of the same device, whose page takes this
        // lease over (it reuses the operator's open console lease): end it only if nobody did.
        endAfterGrace(params.id, body.lease_id ?? "");
        set.status = 204;
        return "";
      },
      { access: "operator", params: ConsoleLeaseParams, body: LeaseForm },
    )
    .post(
      "/devices/:id/remote-access/close",
      async ({ params, principal, request }) => {
        // Every lease of the device, whoever holds it: the flag drops and the tunnel goes. It stays
        // closed for this operator's pages until they reopen it (see panelState).
        await endDeviceLeases(sql, params.id, "operator_closed", actorName(principal!));
        return redirectWithFlash(
          `/devices/${params.id}?tab=remote`,
          {
            kind: "success",
            text: "Remote access closed. It stays closed until you reopen it or another operator opens this device.",
          },
          request,
        );
      },
      { access: "operator", params: ConsoleLeaseParams, body: PanelButtonForm },
    )
    .post(
      "/devices/:id/remote-access/reopen",
      async ({ params, principal, request }) => {
        const props = await state(request, principal!, params.id, true, undefined, true);
        const text = props.myLease
          ? "Remote access reopened."
          : "Remote access could not be reopened: the device is offline.";
        return redirectWithFlash(
          `/devices/${params.id}?tab=remote`,
          { kind: props.myLease ? "success" : "error", text },
          request,
        );
      },
      { access: "operator", params: ConsoleLeaseParams, body: PanelButtonForm },
    );
}
