// Shared by the rollout tests: devices in a test database, a valid script, a device answering its commands.
import { claimCommands, recordCommandResults } from "../../modules/commands/service";
import type { Database } from "../../modules/platform/database";
import { driveRollout } from "../../modules/rollouts/service";
import { newMac } from "../devices/helpers";

export const script = (name: string) =>
  `/*---\nname: ${name}\nschema:\n  type: object\n---*/\nfunction main() { return {}; }\n`;

export async function insertDevices(
  database: Database,
  count: number,
  status = "approved",
): Promise<string[]> {
  const rows = await database.sql<{ id: string }[]>`
    insert into devices (mac_address, approval_status)
    select m, ${status}::device_approval_status from unnest(${Array.from({ length: count }, newMac)}::text[]) m
    returning id::text as id`;
  return rows.map((r) => r.id);
}

export const OPTIONS = { onlineWindowSeconds: 300 };

/** Drives a rollout as its job would, at `now`. */
export const drive = (database: Database, id: string, now = new Date()) =>
  driveRollout(database, id, { now, ...OPTIONS });

/** A device claims its commands and answers each: OK, or FAILED when `fail`. Returns how many it got. */
export async function answer(database: Database, deviceId: string, fail = false): Promise<number> {
  const commands = await claimCommands(database.sql, deviceId);
  if (commands.length === 0) return 0;
  await recordCommandResults(
    database.sql,
    deviceId,
    commands.map((c) =>
      fail
        ? { command_id: c.command_id, status: "FAILED", error: "script exited 1" }
        : { command_id: c.command_id, status: "OK", output: { installed: true } },
    ),
  );
  return commands.length;
}

export async function states(database: Database, id: string): Promise<Record<string, string>> {
  const rows = await database.sql<{ device_id: string; state: string }[]>`
    select device_id::text as device_id, state from rollout_targets where rollout_id = ${id}::uuid`;
  return Object.fromEntries(rows.map((r) => [r.device_id, r.state]));
}

export async function rolloutRow(database: Database, id: string) {
  const [row] = await database.sql<
    { status: string; pause_reason: string | null; current_wave: number; finished_at: Date | null }[]
  >`select status, pause_reason, current_wave, finished_at from rollouts where id = ${id}::uuid`;
  return row!;
}

/** Commands per device queued by rollouts (to check none got two). */
export async function commandsPerDevice(database: Database): Promise<Map<string, number>> {
  const rows = await database.sql<{ device_id: string; n: number }[]>`
    select device_id::text as device_id, count(*)::int as n from pending_commands
    where queued_by like 'rollout %' group by device_id`;
  return new Map(rows.map((r) => [r.device_id, r.n]));
}
