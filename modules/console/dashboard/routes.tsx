import { Elysia } from "elysia";
import { consolePages } from "../../../ui/page";
import { countOpenAlerts } from "../../alerts";
import { recentDevices } from "../../devices/service";
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
    async ({ request, principal }) => {
      const page = pageContext(request, principal);
      const { onlineWindowSeconds } = await ctx.settings.device();
      const [counts, recent, chart, alerts] = await Promise.all([
        ctx.fleetCounts.counts(onlineWindowSeconds),
        recentDevices(sql, RECENT_DEVICES, onlineWindowSeconds),
        fleetActivity(sql),
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
            canManage: canOperate(principal),
            onlineWindowMinutes: Math.round((onlineWindowSeconds / 60) * 100) / 100,
          }}
        />,
      );
    },
    { access: "viewer" },
  );
}
