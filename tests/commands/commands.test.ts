import { describe, expect, test } from "bun:test";
import commandRetentionJob from "../../jobs/command-retention";
import expireCommandsJob from "../../jobs/expire-commands";
import {
  CLAIM_LIMIT,
  cancelCommand,
  claimCommands,
  getCommand,
  listCommands,
  listUnmatchedResults,
  pruneUnmatchedResults,
  queueCommand,
} from "../../modules/commands/service";
import { rejectDevices } from "../../modules/devices/service";
import { commandsTotal } from "../../modules/platform/metrics";
import { approvedDevice, heartbeatUrl, json, register, sampleHeartbeat } from "../devices/helpers";
import { startTestApp } from "../helpers/app";

const app = await startTestApp({ DEVICE_HEARTBEAT_RATE_LIMIT: "1000" });
const sql = app.database.sql;
const TTL = 3600;

type Delivered = {
  command_id: string;
  type: string;
  args: unknown[];
  payload?: unknown;
  payload_ref?: string;
  public_key?: string;
  queued_at: string;
};

async function beat(device: { id: string; token: string }) {
  const response = await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { commands: Delivered[] } }).data.commands;
}

function postResults(device: { id: string; token: string }, body: unknown) {
  return app.fetch(`/api/v1/devices/${device.id}/command_results?api_key=${device.token}`, json(body));
}

const SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl outpost";

describe("command queue and delivery", () => {
  test("a queued command is delivered once, in the heartbeat reply's shape, then takes its result", async () => {
    const device = await approvedDevice(app);
    const queued = await queueCommand(sql, {
      deviceId: device.id,
      type: "ssh_authorize",
      publicKey: SSH_KEY,
      ttlSeconds: TTL,
    });
    expect(queued.status).toBe("queued");
    const [delivered, ...rest] = await beat(device);
    expect(rest).toEqual([]);
    expect(delivered).toEqual({
      command_id: queued.id,
      type: "ssh_authorize",
      args: [],
      public_key: SSH_KEY,
      queued_at: queued.queuedAt.toISOString(),
    });
    expect((await getCommand(sql, queued.id))!.status).toBe("delivered");
    expect(await beat(device)).toEqual([]);

    const response = await postResults(device, {
      results: [{ command_id: queued.id, status: "OK", output: { path: "/x" } }],
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({
      data: { acknowledged_count: 1, results: [{ index: 0, command_id: queued.id, outcome: "recorded" }] },
    });
    const done = (await getCommand(sql, queued.id))!;
    expect(done.status).toBe("succeeded");
    expect(done.output).toEqual({ path: "/x" });
    expect(done.completedAt).toBeInstanceOf(Date);
    // A repeated post is a no-op.
    const again = await postResults(device, {
      results: [{ command_id: queued.id, status: "FAILED", error: "late" }],
    });
    expect(((await again.json()) as { data: { acknowledged_count: number } }).data.acknowledged_count).toBe(
      0,
    );
    expect((await getCommand(sql, queued.id))!.status).toBe("succeeded");
  });

  test("FAILED results store the error", async () => {
    const device = await approvedDevice(app);
    const queued = await queueCommand(sql, {
      deviceId: device.id,
      type: "remove_script",
      args: ["cpu"],
      ttlSeconds: TTL,
    });
    await beat(device);
    await postResults(device, {
      results: [{ command_id: queued.id, status: "FAILED", error: "script not found" }],
    });
    const failed = (await getCommand(sql, queued.id))!;
    expect(failed.status).toBe("failed");
    expect(failed.error).toBe("script not found");
  });

  test(`at most ${CLAIM_LIMIT} commands per heartbeat, oldest first`, async () => {
    const device = await approvedDevice(app);
    const ids: string[] = [];
    for (let i = 0; i < CLAIM_LIMIT + 5; i++) {
      ids.push((await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: TTL })).id);
    }
    const first = await beat(device);
    expect(first.map((c) => c.command_id)).toEqual(ids.slice(0, CLAIM_LIMIT));
    const second = await beat(device);
    expect(second.map((c) => c.command_id)).toEqual(ids.slice(CLAIM_LIMIT));
  });

  test("concurrent heartbeats of one device never deliver a command twice", async () => {
    const device = await approvedDevice(app);
    const ids = new Set<string>();
    for (let i = 0; i < 40; i++)
      ids.add((await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: TTL })).id);
    const replies = await Promise.all(Array.from({ length: 8 }, () => beat(device)));
    const delivered = replies.flat().map((c) => c.command_id);
    expect(delivered.length).toBe(40);
    expect(new Set(delivered)).toEqual(ids);
    // The same through the service with many concurrent claims.
    for (let i = 0; i < 60; i++)
      await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: TTL });
    const claims = await Promise.all(Array.from({ length: 10 }, () => claimCommands(sql, device.id)));
    const claimed = claims.flat().map((c) => c.command_id);
    expect(claimed.length).toBe(60);
    expect(new Set(claimed).size).toBe(60);
  });

  test("a payload above 4 KiB is delivered by reference and fetched with the device's token", async () => {
    const device = await approvedDevice(app);
    const other = await approvedDevice(app);
    const script = (name: string, padding = "") =>
      `/*---\nname: ${name}\nschema:\n  type: object\n---*/\nfunction main() { return {}; }\n${padding}`;
    const big = {
      content_type: "text/javascript",
      name: "cpu",
      data: script("cpu", `// ${"x".repeat(5000)}`),
    };
    const small = { content_type: "text/javascript", name: "mem", data: script("mem") };
    const deferred = await queueCommand(sql, {
      deviceId: device.id,
      type: "install_script",
      payload: big,
      ttlSeconds: TTL,
    });
    const inline = await queueCommand(sql, {
      deviceId: device.id,
      type: "install_script",
      payload: small,
      ttlSeconds: TTL,
    });
    const beforeDelivery = await app.fetch(
      `/api/v1/devices/${device.id}/command_payloads/${deferred.payloadRef}?api_key=${device.token}`,
    );
    expect(beforeDelivery.status).toBe(404);
    const commands = await beat(device);
    const byId = new Map(commands.map((c) => [c.command_id, c]));
    const ref = byId.get(deferred.id)!.payload_ref!;
    expect(ref).toMatch(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/);
    expect(byId.get(deferred.id)!).not.toHaveProperty("payload");
    expect(byId.get(inline.id)!.payload).toEqual(small);
    expect(byId.get(inline.id)!).not.toHaveProperty("payload_ref");

    const fetched = await app.fetch(
      `/api/v1/devices/${device.id}/command_payloads/${ref}?api_key=${device.token}`,
    );
    expect(fetched.status).toBe(200);
    expect(await fetched.json()).toEqual(big);
    const missing = await app.fetch(
      `/api/v1/devices/${device.id}/command_payloads/nope?api_key=${device.token}`,
    );
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("payload_not_found");
    const foreign = await app.fetch(
      `/api/v1/devices/${other.id}/command_payloads/${ref}?api_key=${other.token}`,
    );
    expect(foreign.status).toBe(404);
    const wrongToken = await app.fetch(
      `/api/v1/devices/${device.id}/command_payloads/${ref}?api_key=${other.token}`,
    );
    expect(wrongToken.status).toBe(401);
    const noToken = await app.fetch(`/api/v1/devices/${device.id}/command_payloads/${ref}`);
    expect(noToken.status).toBe(401);
  });

  test("commands past their TTL are never delivered and the job marks them expired", async () => {
    const device = await approvedDevice(app);
    const stale = await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: TTL });
    const fresh = await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: TTL });
    await sql`update pending_commands set expires_at = now() - interval '1 second' where id = ${stale.id}`;
    expect((await beat(device)).map((c) => c.command_id)).toEqual([fresh.id]);
    const expiredSoFar = async () =>
      (await commandsTotal.get()).values.find((v) => v.labels.event === "expired")?.value ?? 0;
    const before = await expiredSoFar();
    await expireCommandsJob.run({}, app.services);
    expect((await getCommand(sql, stale.id))!.status).toBe("expired");
    expect((await getCommand(sql, fresh.id))!.status).toBe("delivered");
    expect((await expiredSoFar()) - before).toBeGreaterThanOrEqual(1); // counted (other tests may expire too)
  });

  test("the retention job deletes history older than COMMAND_RETENTION_DAYS, never a queued or recent command", async () => {
    const device = await approvedDevice(app);
    const queue = () => queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: TTL });
    const [oldDone, oldFailed, oldExpired, oldUnanswered, oldQueued, recentDone] = await Promise.all(
      Array.from({ length: 6 }, queue),
    );
    const age = (id: string, status: string, days: number) =>
      sql`update pending_commands set status = ${status}::command_status,
            delivered_at = now() - make_interval(days => ${days}),
            completed_at = case when ${status} = 'delivered' then null else now() - make_interval(days => ${days}) end
          where id = ${id}`;
    const days = app.config.commandRetentionDays;
    await age(oldDone!.id, "succeeded", days + 1);
    await age(oldFailed!.id, "failed", days + 1);
    await age(oldExpired!.id, "expired", days + 1);
    await age(oldUnanswered!.id, "delivered", days + 1);
    await sql`update pending_commands set queued_at = now() - make_interval(days => ${days + 1}) where id = ${oldQueued!.id}`;
    await age(recentDone!.id, "succeeded", days - 1);
    await commandRetentionJob.run({}, app.services);
    const left = await sql<{ id: string }[]>`select id from pending_commands where device_id = ${device.id}`;
    expect(left.map((r) => r.id).sort()).toEqual([oldQueued!.id, recentDone!.id].sort());
  });

  test("queueing validates type and shape; unknown devices are 404", async () => {
    const device = await approvedDevice(app);
    const cases: [Record<string, unknown>, string][] = [
      [{ type: "reboot" }, "type must be one of"],
      [{ type: "install_script", payload: { name: "x" } }, "payload.data"],
      [
        { type: "install_script", payload: { name: "x", data: "function main() {}" } },
        'The agent would refuse this script: script must start with a front-matter block comment "/*---"',
      ],
      [{ type: "remove_script" }, "script name"],
      [{ type: "ssh_authorize", publicKey: "not a key" }, "public_key"],
      [{ type: "ssh_revoke" }, "session ref"],
      [{ type: "list_scripts", args: [1] }, "args"],
      [{ type: "list_scripts", payload: [1] }, "payload must be"],
    ];
    for (const [input, message] of cases) {
      expect(queueCommand(sql, { deviceId: device.id, ttlSeconds: TTL, type: "", ...input })).rejects.toThrow(
        message,
      );
    }
    expect(
      queueCommand(sql, { deviceId: crypto.randomUUID(), type: "list_scripts", ttlSeconds: TTL }),
    ).rejects.toThrow("Device not found");
  });

  test("cancel deletes a queued command only; listing filters by device and status", async () => {
    const device = await approvedDevice(app);
    const a = await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: TTL });
    await beat(device);
    const b = await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: TTL });
    expect(await cancelCommand(sql, a.id)).toBe("not_queued");
    expect(await cancelCommand(sql, b.id)).toBe("cancelled");
    expect(await cancelCommand(sql, b.id)).toBe("not_found");
    const c = await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: TTL });
    const d = await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: TTL });
    const queued = await listCommands(sql, { deviceId: device.id, status: "queued" });
    expect(queued.commands.map((x) => x.id)).toEqual([d.id, c.id]);
    const first = await listCommands(sql, { deviceId: device.id, limit: 2 });
    const second = await listCommands(sql, { deviceId: device.id, limit: 2, cursor: first.nextCursor });
    expect([...first.commands, ...second.commands].map((x) => x.id)).toEqual([d.id, c.id, a.id]);
    expect(second.nextCursor).toBeUndefined();
  });
});

describe("POST command_results: bad input", () => {
  test("results missing or not a list → 400 invalid_request (before authentication)", async () => {
    const device = await approvedDevice(app);
    for (const body of [{}, { results: "x" }, { results: { a: 1 } }, []]) {
      const response = await postResults(device, body);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("invalid_request");
    }
    const unknown = await app.fetch(`/api/v1/devices/${crypto.randomUUID()}/command_results`, json({}));
    expect(unknown.status).toBe(400);
    const malformed = await app.fetch(
      `/api/v1/devices/${device.id}/command_results?api_key=${device.token}`,
      {
        method: "POST",
        body: "{results:",
      },
    );
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: { code: string } }).error.code).toBe("invalid_json");
  });

  test("a malformed entry is refused alone; a post with nothing well-formed → 422 invalid_results, nothing written", async () => {
    const device = await approvedDevice(app);
    const command = await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: TTL });
    await beat(device);
    const malformed: [unknown, string][] = [
      [{ command_id: command.id, status: "DONE" }, "results[0].status must be OK or FAILED"],
      ["x", "results[0].must be an object"],
      [{ command_id: 5, status: "OK" }, "results[0].command_id must be a string"],
      [{ command_id: command.id, status: "OK", error: 5 }, "results[0].error must be a string"],
    ];
    for (const [item, message] of malformed) {
      const response = await postResults(device, { results: [item] });
      expect(response.status).toBe(422);
      const { error } = (await response.json()) as { error: { code: string; message: string } };
      expect(error).toMatchObject({ code: "invalid_results", message });
    }
    expect((await getCommand(sql, command.id))!.status).toBe("delivered");
    // Next to a good entry, each bad one costs only itself.
    const response = await postResults(device, {
      results: [...malformed.map(([item]) => item), { command_id: command.id, status: "OK" }],
    });
    expect(response.status).toBe(202);
    const body = (await response.json()) as {
      data: { acknowledged_count: number; results: { index: number; outcome: string; reason?: string }[] };
    };
    expect(body.data.acknowledged_count).toBe(1);
    expect(body.data.results.map((r) => [r.index, r.outcome, r.reason])).toEqual([
      [0, "invalid", "results[0].status must be OK or FAILED"],
      [1, "invalid", "results[1].must be an object"],
      [2, "invalid", "results[2].command_id must be a string"],
      [3, "invalid", "results[3].error must be a string"],
      [4, "recorded", undefined],
    ]);
    expect((await getCommand(sql, command.id))!.status).toBe("succeeded");
  });

  test("duplicates: the first counts; ids this device was never sent and missing ids are kept as results for no command; a retry changes nothing", async () => {
    const device = await approvedDevice(app);
    const other = await approvedDevice(app);
    const mine = await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: TTL });
    const theirs = await queueCommand(sql, { deviceId: other.id, type: "list_scripts", ttlSeconds: TTL });
    await beat(device);
    await beat(other);
    const unknown = crypto.randomUUID();
    const results = [
      { command_id: mine.id, status: "OK", output: { first: true } },
      { command_id: mine.id, status: "FAILED", error: "duplicate_command_id" },
      { command_id: theirs.id, status: "FAILED", error: "forged" },
      { command_id: unknown, status: "OK" },
      { command_id: "not-a-uuid", status: "OK" },
      { command_id: "", status: "FAILED", error: "missing_command_id" },
      { status: "FAILED", error: "no id at all" },
    ];
    const response = await postResults(device, { results });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({
      data: {
        acknowledged_count: 1,
        results: [
          { index: 0, command_id: mine.id, outcome: "recorded" },
          {
            index: 1,
            command_id: mine.id,
            outcome: "recorded_without_command",
            reason: "duplicate_command_id",
          },
          { index: 2, command_id: theirs.id, outcome: "recorded_without_command", reason: "unknown_command" },
          { index: 3, command_id: unknown, outcome: "recorded_without_command", reason: "unknown_command" },
          {
            index: 4,
            command_id: "not-a-uuid",
            outcome: "recorded_without_command",
            reason: "unknown_command",
          },
          { index: 5, command_id: "", outcome: "recorded_without_command", reason: "missing_command_id" },
          { index: 6, command_id: "", outcome: "recorded_without_command", reason: "missing_command_id" },
        ],
      },
    });
    const stored = (await getCommand(sql, mine.id))!;
    expect(stored.status).toBe("succeeded");
    expect(stored.output).toEqual({ first: true });
    expect((await getCommand(sql, theirs.id))!.status).toBe("delivered");
    const kept = await listUnmatchedResults(sql, device.id);
    expect(kept.total).toBe(6);
    expect((await listUnmatchedResults(sql, other.id)).total).toBe(0);
    // The agent's retry of the first entry: its command already has a result.
    const retry = await postResults(device, { results: [results[0]] });
    expect(((await retry.json()) as { data: unknown }).data).toEqual({
      acknowledged_count: 0,
      results: [{ index: 0, command_id: mine.id, outcome: "ignored", reason: "already_recorded" }],
    });
    expect((await listUnmatchedResults(sql, device.id)).total).toBe(6);
    // Retention prunes them with the command history.
    await sql`update unmatched_command_results set received_at = now() - interval '100 days'
      where device_id = ${device.id} and command_id = 'not-a-uuid'`;
    expect(await pruneUnmatchedResults(sql, 90)).toBe(1);
    expect((await listUnmatchedResults(sql, device.id)).total).toBe(5);
  });

  test("authentication is checked on results and payloads: 404 unknown/non-UUID, 401, 403 pending/rejected", async () => {
    const device = await approvedDevice(app);
    const other = await approvedDevice(app);
    const pending = (await register(app)).body.data;
    const rejected = (await register(app)).body.data;
    await rejectDevices(sql, [rejected.id]);
    // Held a valid token and got a command delivered, then was turned away.
    const turnedAway = await approvedDevice(app);
    const command = await queueCommand(sql, {
      deviceId: turnedAway.id,
      type: "list_scripts",
      ttlSeconds: TTL,
    });
    expect((await beat(turnedAway)).map((c) => c.command_id)).toEqual([command.id]);
    await sql`update devices set approval_status = 'rejected' where id = ${turnedAway.id}`;
    const body = { results: [{ command_id: command.id, status: "OK" }] };
    const cases: [string, string, string | undefined, number, string][] = [
      ["an unknown device", crypto.randomUUID(), device.token, 404, "device_not_found"],
      ["a non-UUID device id", "not-a-uuid", device.token, 404, "device_not_found"],
      ["a numeric device id", "12345", undefined, 404, "device_not_found"],
      ["no api_key", device.id, undefined, 401, "missing_api_key"],
      ["another device's token", device.id, other.token, 401, "invalid_api_key"],
      ["a pending device", pending.id, "anything", 403, "device_not_approved"],
      ["a rejected device", rejected.id, "anything", 403, "device_not_approved"],
      ["a rejected device with its old token", turnedAway.id, turnedAway.token, 403, "device_not_approved"],
    ];
    for (const [name, id, key, status, code] of cases) {
      const query = key === undefined ? "" : `?api_key=${key}`;
      for (const [endpoint, init] of [
        [`/api/v1/devices/${id}/command_results${query}`, json(body)],
        [`/api/v1/devices/${id}/command_payloads/some-ref${query}`, undefined],
      ] as const) {
        const response = await app.fetch(endpoint, init);
        const error = ((await response.json()) as { error: { code: string } }).error;
        expect({ name, endpoint, status: response.status, code: error.code }).toEqual({
          name,
          endpoint,
          status,
          code,
        });
      }
    }
    // The refused results stored nothing.
    expect((await getCommand(sql, command.id))!.status).toBe("delivered");
    const empty = await postResults(device, { results: [] });
    expect(await empty.json()).toEqual({ data: { acknowledged_count: 0, results: [] } });
    const oversized = await postResults(device, {
      results: [{ command_id: crypto.randomUUID(), status: "OK", output: "x".repeat(1_100_000) }],
    });
    expect(oversized.status).toBe(413);
  });
});
