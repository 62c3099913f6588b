// The command queue's edges below the HTTP API: ids that are not UUIDs, the inline payload limit,
// what a claimed row becomes on the wire, and retention past one batch.
import { describe, expect, test } from "bun:test";
import {
  cancelCommand,
  commandPayload,
  deliveredCommand,
  getCommand,
  INLINE_PAYLOAD_LIMIT,
  pruneCommandHistory,
  queueCommand,
} from "../../modules/commands/service";
import { newMac } from "../devices/helpers";
import { createTestDatabase } from "../helpers/database";

const { sql } = await createTestDatabase();
const [device] = await sql<
  { id: string }[]
>`insert into devices (mac_address) values (${newMac()}) returning id`;
const deviceId = device!.id;

async function queueError(input: Partial<Parameters<typeof queueCommand>[1]>) {
  return queueCommand(sql, { deviceId, type: "list_scripts", ttlSeconds: 60, ...input }).then(
    () => "queued",
    (error: { status: number; code: string }) => `${error.status} ${error.code}`,
  );
}

describe("command queue edges", () => {
  test("a device id that is not a UUID, or names no device, is 404 device_not_found", async () => {
    expect(await queueError({ deviceId: "not-a-uuid" })).toBe("404 device_not_found");
    expect(await queueError({ deviceId: crypto.randomUUID() })).toBe("404 device_not_found");
    expect(await queueError({})).toBe("queued");
  });

  test("a payload of exactly INLINE_PAYLOAD_LIMIT bytes is inline; one byte more goes by reference", async () => {
    // {"a":"…"} is 8 bytes around the text.
    const inline = await queueCommand(sql, {
      deviceId,
      type: "list_scripts",
      payload: { a: "x".repeat(INLINE_PAYLOAD_LIMIT - 8) },
      ttlSeconds: 60,
    });
    expect(inline.payloadRef).toBeNull();
    const deferred = await queueCommand(sql, {
      deviceId,
      type: "list_scripts",
      payload: { a: "x".repeat(INLINE_PAYLOAD_LIMIT - 7) },
      ttlSeconds: 60,
    });
    expect(deferred.payloadRef).toMatch(/^p[\w-]+$/);
    expect(await commandPayload(sql, deviceId, deferred.payloadRef!)).toBeUndefined(); // not delivered yet
    await sql`update pending_commands set status = 'delivered' where id = ${deferred.id}`;
    expect(await commandPayload(sql, deviceId, deferred.payloadRef!)).toEqual(deferred.payload!);
  });

  test("lookups by an id that is not a UUID find nothing", async () => {
    expect(await getCommand(sql, "nope")).toBeUndefined();
    expect(await cancelCommand(sql, "nope")).toBe("not_found");
  });

  test("a claimed row on the wire: args kept, payload or payload_ref, public_key only when set", () => {
    const row = {
      id: "c1",
      type: "remove_script" as const,
      args: ["cpu"],
      payload: null,
      payload_ref: null,
      public_key: null,
      queued_at: new Date("2026-01-02T03:04:05Z"),
    };
    expect(deliveredCommand(row)).toStrictEqual({
      command_id: "c1",
      type: "remove_script",
      args: ["cpu"],
      queued_at: "2026-01-02T03:04:05.000Z",
    });
    expect(deliveredCommand({ ...row, args: null as never, payload: { name: "cpu" } })).toStrictEqual({
      command_id: "c1",
      type: "remove_script",
      args: [],
      payload: { name: "cpu" },
      queued_at: "2026-01-02T03:04:05.000Z",
    });
    expect(
      deliveredCommand({
        ...row,
        payload: { name: "cpu" },
        payload_ref: "pref",
        public_key: "ssh-ed25519 AAAA",
      }),
    ).toStrictEqual({
      command_id: "c1",
      type: "remove_script",
      args: ["cpu"],
      payload_ref: "pref",
      public_key: "ssh-ed25519 AAAA",
      queued_at: "2026-01-02T03:04:05.000Z",
    });
  });

  test("retention deletes past one batch of 5000 and returns how many it deleted", async () => {
    await sql`delete from pending_commands`;
    await sql`
      insert into pending_commands (device_id, type, status, completed_at, expires_at)
      select ${deviceId}::uuid, 'list_scripts', 'succeeded', now() - interval '91 days', now()
      from generate_series(1, 5001)`;
    await queueCommand(sql, { deviceId, type: "list_scripts", ttlSeconds: 60 });
    expect(await pruneCommandHistory(sql, 90)).toBe(5001);
    const [left] = await sql<{ n: number }[]>`select count(*)::int as n from pending_commands`;
    expect(left!.n).toBe(1);
  });
});
