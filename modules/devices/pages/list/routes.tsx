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
import { DeviceResults, DevicesPage, type DevicesPageProps, matchingText } from "./page";
import { type DeviceQuery, devicesReturn, listFilters, parseDeviceQuery, queryCondition } from "./query";

/** Errors of `?q=`/`?view=` the list shows beside its search box instead of an error page. */
const QUERY_ERRORS = ["invalid_query", "view_not_found"];

const PAGE_SIZE = 50;

const filtered = (query: DeviceQuery) =>
  Boolean(
    query.search ||
      query.q ||
      query.view ||
      query.approval_status ||
      query.connectivity_status ||
      query.product,
  );

/** The device list (`/devices`) and its bulk approve/reject form. */
export function deviceListRoutes(ctx: AppContext) {
  const { pageContext, htmlPage, redirectWithFlash } = consolePages(ctx.config);
  const { database } = ctx;
  const sql = database.sql;

  /** The list's filters for `query`, or why `?q=`/`?view=` cannot be applied (said beside the box). */
  async function filtersFor(query: DeviceQuery, onlineWindowSeconds: number) {
    let match: Awaited<ReturnType<typeof queryCondition>>;
    try {
      match = await queryCondition(ctx, query, onlineWindowSeconds);
    } catch (error) {
      if (!(error instanceof AppError) || !QUERY_ERRORS.includes(error.code)) throw error;
      const at = (error.details as { position?: number } | undefined)?.position;
      return { queryError: { message: error.message, position: at } };
    }
    const filters = await consoleFilters(sql, {
      ...listFilters(query),
      matching: match.condition,
      onlineWindowSeconds,
    });
    return { filters, viewName: match.viewName };
  }

  async function devicesProps(
    principal: Principal | undefined,
    query: DeviceQuery,
  ): Promise<DevicesPageProps> {
    const { onlineWindowSeconds } = await ctx.settings.device();
    const canManage = canOperate(principal);
    const found = await filtersFor(query, onlineWindowSeconds);
    if (!found.filters) {
      const fleet = await ctx.fleetCounts.counts(onlineWindowSeconds);
      return { ...emptyProps(query, fleet.total, canManage), queryError: found.queryError };
    }
    const [list, fleet] = await Promise.all([
      listConsoleDevices(sql, {
        ...found.filters,
        sort: query.sort,
        order: query.order,
        limit: PAGE_SIZE,
        after: query.after,
        before: query.before,
      }),
      ctx.fleetCounts.counts(onlineWindowSeconds),
    ]);
    return {
      query,
      devices: list.devices,
      next: list.next,
      prev: list.prev,
      // A filtered list's count is a request of its own (GET /devices/matching): at a million devices it
      // costs more than the page (docs/fleet.md, Figures).
      matching: filtered(query) ? undefined : { count: fleet.total, more: false },
      fleetTotal: fleet.total,
      canManage,
      pageSize: PAGE_SIZE,
      viewName: found.viewName,
    };
  }

  function emptyProps(query: DeviceQuery, fleetTotal: number, canManage: boolean): DevicesPageProps {
    const none = { devices: [], next: undefined, prev: undefined, matching: { count: 0, more: false } };
    return { query, ...none, fleetTotal, canManage, pageSize: PAGE_SIZE, viewName: undefined };
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
    .get(
      "/devices/matching",
      async ({ query }) => {
        const parsed = parseDeviceQuery(query);
        const { onlineWindowSeconds } = await ctx.settings.device();
        const [found, fleet] = await Promise.all([
          filtersFor(parsed, onlineWindowSeconds),
          ctx.fleetCounts.counts(onlineWindowSeconds),
        ]);
        const matching = found.filters
          ? await countMatchingDevices(sql, found.filters)
          : { count: 0, more: false };
        return htmlPage({ flash: undefined }, <span safe>{matchingText(matching, fleet.total)}</span>);
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
