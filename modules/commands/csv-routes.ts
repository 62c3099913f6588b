import { Elysia } from "elysia";
import { getDevice } from "../devices/service";
import type { AppContext } from "../platform/context";
import { csvResponse, keysetBatches } from "../platform/csv";
import { AppError } from "../platform/errors";
import { commandScript, listCommands } from "./service";

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
  "args",
  "expires_at",
  "output",
];

/**
 * `GET /devices/:id/commands.csv`: a device's whole command history, newest first, streamed 500 at a
 * time by keyset (404 for a device that does not exist, as its page).
 */
export function commandCsvRoutes(ctx: AppContext) {
  const sql = ctx.database.sql;
  return new Elysia({ name: "command-csv" }).use(ctx.access).get(
    "/devices/:id/commands.csv",
    async ({ params }) => {
      const device = await getDevice(sql, params.id, await ctx.settings.device());
      if (!device)
        throw new AppError(404, "device_not_found", "This device does not exist, or it was deleted.");
      const batches = keysetBatches(
        async (cursor: string | undefined) => {
          const page = await listCommands(sql, { deviceId: device.id, limit: 500, cursor });
          return { items: page.commands, next: page.nextCursor };
        },
        (c) => [
          c.id,
          c.type,
          commandScript(c),
          c.status,
          c.queuedAt,
          c.deliveredAt,
          c.completedAt,
          c.queuedBy,
          c.error,
          JSON.stringify(c.args),
          c.expiresAt,
          c.output === null || c.output === undefined ? null : JSON.stringify(c.output),
        ],
      );
      const date = new Date().toISOString().slice(0, 10);
      return csvResponse(`commands-${device.name}-${date}.csv`, COLUMNS, batches);
    },
    { access: "viewer" },
  );
}
