import { Elysia } from "elysia";
import type { AppContext } from "../platform/context";
import { csvResponse, keysetBatches } from "../platform/csv";
import { DevicePageQuery } from "./model";
import { listFilters, parseDeviceQuery, queryCondition } from "./pages/list/query";
import { consoleFilters, listConsoleDevices } from "./queries";

const COLUMNS = [
  "id",
  "mac_address",
  "name",
  "product_name",
  "approval_status",
  "online",
  "last_seen_at",
  "ipv4_address",
  "created_at",
];

/**
 * `GET /devices.csv`: every device the device list (`/devices`) shows for the same query — its search,
 * query and view (`q`, `view`), filters (`approval_status`, `connectivity_status`, `product`) and sort (`sort`, `order`), read by the
 * list's own query — on all its pages, streamed 200 at a time by keyset (paging cursors are ignored).
 */
export function deviceCsvRoutes(ctx: AppContext) {
  const sql = ctx.database.sql;
  return new Elysia({ name: "device-csv" }).use(ctx.access).get(
    "/devices.csv",
    async ({ query }) => {
      const listQuery = parseDeviceQuery(query);
      const { onlineWindowSeconds } = await ctx.settings.device();
      const { condition } = await queryCondition(ctx, listQuery, onlineWindowSeconds);
      const filters = await consoleFilters(sql, {
        ...listFilters(listQuery),
        matching: condition,
        onlineWindowSeconds,
      });
      const batches = keysetBatches(
        async (after: string | undefined) => {
          const page = await listConsoleDevices(sql, {
            ...filters,
            sort: listQuery.sort,
            order: listQuery.order,
            limit: 200,
            after,
          });
          return { items: page.devices, next: page.next };
        },
        (d) => [
          d.id,
          d.macAddress,
          d.name,
          d.productName,
          d.approvalStatus,
          d.online,
          d.lastSeenAt,
          d.ipv4Address,
          d.createdAt,
        ],
      );
      return csvResponse(`devices-${new Date().toISOString().slice(0, 10)}.csv`, COLUMNS, batches);
    },
    { access: "viewer", query: DevicePageQuery },
  );
}
