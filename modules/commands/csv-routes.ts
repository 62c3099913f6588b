import { Elysia } from "elysia";
import type { AppContext } from "../platform/context";
import { csvResponse } from "../platform/csv";
import { AppError } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import { listCommands } from "./service";

const COLUMNS = [
  "id",
  "type",
  "script",
  "status",
  "queued_at",
  "delivered_at",
  "completed_at",
  "queued_by",
  "error",
];

/** `GET /devices/:id/commands.csv`: a device's whole command history, newest first, streamed by keyset. */
export function commandCsvRoutes(ctx: AppContext) {
  const sql = ctx.database.sql;
  return new Elysia({ name: "command-csv" }).use(ctx.access).get(
    "/devices/:id/commands.csv",
    async ({ params }) => {
      if (!isUuid(params.id)) throw new AppError(404, "device_not_found", "This device does not exist.");
      const deviceId = params.id;
      async function* batches() {
        let cursor: string | undefined;
        // Bounded: the keyset cursor only moves forward; the walk ends at the last page.
        for (;;) {
          const page = await listCommands(sql, { deviceId, limit: 500, cursor });
          yield page.commands.map((c) => [
            c.id,
            c.type,
            typeof c.payload?.name === "string" ? c.payload.name : null,
            c.status,
            c.queuedAt,
            c.deliveredAt,
            c.completedAt,
            c.queuedBy,
            c.error,
          ]);
          if (!page.nextCursor) return;
          cursor = page.nextCursor;
        }
      }
      return csvResponse(`commands-${deviceId.slice(0, 8)}.csv`, COLUMNS, batches());
    },
    { access: "viewer" },
  );
}
