import { Elysia } from "elysia";
import { consolePages } from "../../../../ui/page";
import { noteAudit } from "../../../audit/service";
import { canOperate, type Principal } from "../../../platform/access";
import type { AppContext } from "../../../platform/context";
import { AppError } from "../../../platform/errors";
import { formList } from "../../../platform/schemas";
import { APPROVAL_BATCH_MAX, approveDevices, rejectDevices } from "../../management";
import { BulkDecisionForm, DevicePageQuery } from "../../model";
import { consoleFilters, countMatchingDevices, listConsoleDevices } from "../../queries";
import { DeviceResults, DevicesPage, type DevicesPageProps } from "./page";
import { type DeviceQuery, devicesReturn, listFilters, parseDeviceQuery } from "./query";

const PAGE_SIZE = 50;

/** The device list (`/devices`) and its bulk approve/reject form. */
export function deviceListRoutes(ctx: AppContext) {
  const { pageContext, htmlPage, redirectWithFlash } = consolePages(ctx.config);
  const { database } = ctx;
  const sql = database.sql;

  async function devicesProps(
    principal: Principal | undefined,
    query: DeviceQuery,
  ): Promise<DevicesPageProps> {
    const { onlineWindowSeconds } = await ctx.settings.device();
    const filters = await consoleFilters(sql, { ...listFilters(query), onlineWindowSeconds });
    const filtered = Boolean(
      query.search || query.approval_status || query.connectivity_status || query.product,
    );
    const [list, fleet, matching] = await Promise.all([
      listConsoleDevices(sql, {
        ...filters,
        sort: query.sort,
        order: query.order,
        limit: PAGE_SIZE,
        after: query.after,
        before: query.before,
      }),
      ctx.fleetCounts.counts(onlineWindowSeconds),
      filtered ? countMatchingDevices(sql, filters) : undefined,
    ]);
    return {
      query,
      devices: list.devices,
      next: list.next,
      prev: list.prev,
      matching: matching ?? { count: fleet.total, more: false },
      fleetTotal: fleet.total,
      canManage: canOperate(principal),
      pageSize: PAGE_SIZE,
    };
  }

  return new Elysia({ name: "device-list-page" })
    .use(ctx.access)
    .get(
      "/devices",
      async ({ request, principal, query }) => {
        const page = pageContext(request, principal);
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
      { access: "viewer", query: DevicePageQuery },
    )
    .post(
      "/devices/bulk",
      async ({ body, request }) => {
        const back = devicesReturn(body.return_to);
        const ids = formList(body.ids)
          .flatMap((id) => id.split(","))
          .filter((id) => id.trim() !== "");
        const { action } = body;
        if (action !== "approve" && action !== "reject") {
          return redirectWithFlash(back, { kind: "error", text: "Choose Approve or Reject." });
        }
        if (ids.length === 0) {
          return redirectWithFlash(back, { kind: "error", text: "Select at least one device first." });
        }
        if (ids.length > APPROVAL_BATCH_MAX) {
          return redirectWithFlash(back, {
            kind: "error",
            text: `Select at most ${APPROVAL_BATCH_MAX} devices at once.`,
          });
        }
        const changed = await (action === "approve" ? approveDevices : rejectDevices)(sql, ids);
        noteAudit(request, { details: { changed_ids: changed } });
        const verb = action === "approve" ? "approved" : "rejected";
        const unchanged = new Set(ids.map((id) => id.toLowerCase())).size - changed.length;
        const text1 = `${changed.length} ${changed.length === 1 ? "device" : "devices"} ${verb}.`;
        const text2 = unchanged > 0 ? ` ${unchanged} not pending, left unchanged.` : "";
        return redirectWithFlash(back, {
          kind: changed.length > 0 ? "success" : "info",
          text: text1 + text2,
        });
      },
      { access: "operator", body: BulkDecisionForm },
    );
}
