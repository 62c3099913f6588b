import { Elysia } from "elysia";
import type { AppContext } from "../platform/context";
import { csvResponse } from "../platform/csv";
import { deviceSettings } from "../settings/service";
import { DEVICE_SORTS, type DeviceSort, listDevices, normaliseDeviceFilters } from "./service";

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
 * `GET /devices.csv`: every device matching the device list's filters (`search`, `approval_status`,
 * `connectivity_status`, `product`) in its sort (`sort`, `order`), streamed 500 at a time by keyset.
 */
export function deviceCsvRoutes(ctx: AppContext) {
  const sql = ctx.database.sql;
  return new Elysia({ name: "device-csv" }).use(ctx.access).get(
    "/devices.csv",
    async ({ request }) => {
      const params = Object.fromEntries(new URL(request.url).searchParams);
      const filters = normaliseDeviceFilters(params);
      const sort = (DEVICE_SORTS as readonly string[]).includes(params.sort ?? "")
        ? (params.sort as DeviceSort)
        : undefined;
      const order = params.order === "asc" || params.order === "desc" ? params.order : undefined;
      const { onlineWindowSeconds } = await deviceSettings(ctx.config);
      async function* batches() {
        let cursor: string | undefined;
        // Bounded: the keyset cursor only moves forward; the walk ends at the last page.
        for (;;) {
          const page = await listDevices(sql, {
            ...filters,
            sort,
            order,
            onlineWindowSeconds,
            limit: 500,
            cursor,
          });
          yield page.devices.map((d) => [
            d.id,
            d.macAddress,
            typeof d.metadata.name === "string" ? d.metadata.name : null,
            d.productName,
            d.approvalStatus,
            d.online,
            d.lastSeenAt,
            d.ipv4Address,
            d.createdAt,
          ]);
          if (!page.nextCursor) return;
          cursor = page.nextCursor;
        }
      }
      return csvResponse(`devices-${new Date().toISOString().slice(0, 10)}.csv`, COLUMNS, batches());
    },
    { access: "viewer" },
  );
}
