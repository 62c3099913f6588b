import { Elysia } from "elysia";
import { consolePages } from "../../../ui/page";
import { countOpenAlerts } from "../../alerts";
import { recentDevices } from "../../devices/service";
import { deviceMatch, listViews } from "../../fleet/service";
import { canOperate } from "../../platform/access";
import type { AppContext } from "../../platform/context";
import { fleetActivity } from "../../telemetry/service";
import { DashboardPage } from "./page";

const RECENT_DEVICES = 8;

/** The dashboard (`/`): fleet counts, activity over 24 h, the newest devices. */
export function dashboardRoutes(ctx: AppContext) {
  const { pageContext, htmlPage } = consolePages(ctx.config);
  const { database } = ctx;
  const sql = database.sql;
  return new Elysia({ name: "dashboard-page" }).use(ctx.access).get(
    "/",
    async ({ request, principal, query }) => {
      const page = pageContext(request, principal);
      const { onlineWindowSeconds } = await ctx.settings.device();
      // `?view=`: the cards count that saved view's devices as the fleet's are counted (exactly up to
      // 20,000 devices; beyond, the last count at once, refreshed in the background), without live updates.
      const match =
        typeof query.view === "string" && query.view.trim() !== ""
          ? await deviceMatch(database, { view: query.view }, { onlineWindowSeconds })
          : undefined;
      const [counts, recent, chart, alerts, views] = await Promise.all([
        ctx.fleetCounts.counts(
          onlineWindowSeconds,
          // A view's query is part of its key: an edited view is counted afresh.
          match?.view && {
            key: `view:${match.view.id}:${match.view.query}`,
            where: match.condition ?? sql`true`,
          },
        ),
        recentDevices(sql, RECENT_DEVICES, onlineWindowSeconds),
        fleetActivity(sql),
        countOpenAlerts(sql),
        listViews(database),
      ]);
      return htmlPage(
        page,
        <DashboardPage
          ctx={page}
          props={{
            counts: { ...counts, alerts },
            recent,
            activity: chart,
            canManage: canOperate(principal),
            view: match?.view && { id: match.view.id, name: match.view.name },
            views: views.map((v) => ({ id: v.id, name: v.name })),
            onlineWindowMinutes: Math.round((onlineWindowSeconds / 60) * 100) / 100,
          }}
        />,
      );
    },
    { access: "viewer" },
  );
}
