// The Commands tab's history as CSV: every command of the device, newest first, through commands' service.
import { listCommands } from "../../commands/service";
import type { Device } from "../../devices/service";
import { csvResponse, keysetBatches } from "../../platform/csv";
import type { Sql } from "../../platform/database";
import { commandScript } from "./scripts";

const COLUMNS = [
  "id",
  "type",
  "script",
  "args",
  "status",
  "queued_by",
  "queued_at",
  "delivered_at",
  "completed_at",
  "expires_at",
  "error",
  "output",
];

/** `GET /devices/:id/commands.csv`: streamed 500 at a time by keyset, as the tab pages them. */
export function deviceCommandsCsv(sql: Sql, device: Device): Response {
  const batches = keysetBatches(
    async (cursor: string | undefined) => {
      const page = await listCommands(sql, { deviceId: device.id, limit: 500, cursor });
      return { items: page.commands, next: page.nextCursor };
    },
    (c) => [
      c.id,
      c.type,
      commandScript(c),
      JSON.stringify(c.args),
      c.status,
      c.queuedBy,
      c.queuedAt,
      c.deliveredAt,
      c.completedAt,
      c.expiresAt,
      c.error,
      c.output === null || c.output === undefined ? null : JSON.stringify(c.output),
    ],
  );
  const date = new Date().toISOString().slice(0, 10);
  return csvResponse(`commands-${device.name}-${date}.csv`, COLUMNS, batches);
}
