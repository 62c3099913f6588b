/**
 * Heartbeats are written in batches (modules/heartbeat/service.ts, platform/keyed-batcher.ts): what
 * batching could change must not change. One batch runs at a time here, so concurrent requests are
 * gathered behind it; a statement-level trigger counts the telemetry statements to prove they were.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { cancelCommand, queueCommand } from "../../modules/commands/service";
import { rejectDevices } from "../../modules/devices/service";
import { openLease } from "../../modules/remote-access/service";
import { startTestApp } from "../helpers/app";
import {
  approvedDevice,
  countStatements,
  heartbeatUrl,
  json,
  register,
  sampleHeartbeat,
  schemaOf,
} from "./helpers";

const RATE_LIMIT = 5;
const app = await startTestApp({
  DEVICE_HEARTBEAT_RATE_LIMIT: String(RATE_LIMIT),
  HEARTBEAT_BATCH_CONCURRENCY: "1",
});
const sql = app.database.sql;
type Device = Awaited<ReturnType<typeof approvedDevice>>;

let statementsSoFar: () => Promise<number>;

beforeAll(async () => {
  statementsSoFar = await countStatements(app, "telemetry_events", "insert");
  await sql.unsafe(`
    create function test_poison() returns trigger language plpgsql as $$
    begin
      if new.payload::text like '%"poison"%' then raise exception 'poisoned heartbeat'; end if;
      return new;
    end $$;
    create trigger test_poison before insert on telemetry_events
      for each row execute function test_poison();`);
});

async function telemetryOf(deviceId: string) {
  return sql<{ uptime: number }[]>`
    select (payload #>> '{device,uptime_seconds}')::int as uptime from telemetry_events
    where device_id = ${deviceId} order by recorded_at, id`;
}

function beat(device: Device, body: unknown = sampleHeartbeat()) {
  return app.fetch(heartbeatUrl(device.id, device.token), json(body));
}

function withUptime(uptime: number, extra: Record<string, unknown> = {}) {
  const body = sampleHeartbeat(extra);
  (body.telemetry.device as { uptime_seconds: number }).uptime_seconds = uptime;
  return body;
}

describe("batched heartbeats", () => {
  test("concurrent heartbeats share statements, and each is stored and answered as its own", async () => {
    const devices = await Promise.all(Array.from({ length: 24 }, () => approvedDevice(app)));
    const before = await statementsSoFar();
    const responses = await Promise.all(devices.map((device, i) => beat(device, withUptime(1000 + i))));
    expect(responses.map((r) => r.status)).toEqual(devices.map(() => 200));
    const statements = (await statementsSoFar()) - before;
    expect(statements).toBeGreaterThan(0);
    expect(statements).toBeLessThan(devices.length); // gathered, not one statement each
    for (const [i, device] of devices.entries())
      expect((await telemetryOf(device.id)).map((row) => row.uptime)).toEqual([1000 + i]);
  });

  test("in one batch each device gets the schema it announced, or keeps its own when it announced none", async () => {
    const registered = { product: "atom", properties: { old: { type: "number" } } };
    const devices = await Promise.all(
      Array.from({ length: 8 }, () => approvedDevice(app, { schema_definition: registered })),
    );
    // A control character, a separator and odd Unicode in the schema's text: it travels joined by U+001E.
    const announced = (i: number) => ({
      product: "atom",
      version: `v${i}\u001e\t"ü😀`,
      properties: { [`field_${i}`]: { type: "string", description: "a\u001eb\r\nc" } },
    });
    const announcing = (i: number) => i % 2 === 0;
    const before = await statementsSoFar();
    const responses = await Promise.all(
      devices.map((device, i) =>
        beat(
          device,
          withUptime(i, {
            meta: {
              timestamp: new Date().toISOString(),
              ...(announcing(i) ? { schema_definition: announced(i) } : {}),
            },
          }),
        ),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(devices.map(() => 200));
    expect((await statementsSoFar()) - before).toBeLessThan(devices.length);
    for (const [i, device] of devices.entries())
      expect(await schemaOf(app, device.id)).toEqual(announcing(i) ? announced(i) : registered);
    // Four devices announced four schemas, the other four share the one they registered with: stored once.
    const [{ n }] = await sql<{ n: number }[]>`
      select count(*)::int as n from telemetry_schemas where schema->>'product' = 'atom'
        and hash in (select schema_hash from devices where id = any(${devices.map((d) => d.id)}::uuid[]))`;
    expect(n).toBe(5);
    // The same schema announced again (its check remembered) still replaces one that changed since.
    await sql`insert into telemetry_schemas (hash, schema) values ('changed', '{"product":"other"}')
      on conflict do nothing`;
    await sql`update devices set schema_hash = 'changed' where id = ${devices[0]!.id}`;
    expect(
      (await beat(devices[0]!, withUptime(9, { meta: { schema_definition: announced(0) } }))).status,
    ).toBe(200);
    expect(await schemaOf(app, devices[0]!.id)).toEqual(announced(0));
  });

  test("a schema that cannot be stored leaves the heartbeat stored once and answered; the next one stores it", async () => {
    const device = await approvedDevice(app);
    const schema = { product: "sensor", version: "2", properties: { rpm: { type: "integer" } } };
    const announcing = (uptime: number) => withUptime(uptime, { meta: { schema_definition: schema } });
    await sql.unsafe(`
      create function test_refuse_schema() returns trigger language plpgsql as $$
      begin raise exception 'schema refused'; end $$;
      create trigger test_refuse_schema before update of schema_hash on devices
        for each row execute function test_refuse_schema();`);
    try {
      expect((await beat(device, announcing(1))).status).toBe(200);
      expect((await telemetryOf(device.id)).map((row) => row.uptime)).toEqual([1]); // not run again
      expect(await schemaOf(app, device.id)).not.toEqual(schema);
    } finally {
      await sql.unsafe("drop trigger test_refuse_schema on devices; drop function test_refuse_schema();");
    }
    expect((await beat(device, announcing(2))).status).toBe(200);
    expect(await schemaOf(app, device.id)).toEqual(schema);
    expect((await telemetryOf(device.id)).map((r) => r.uptime)).toEqual([1, 2]);
  });

  test("two heartbeats of one device in flight together are both stored, in order, and both counted", async () => {
    const device = await approvedDevice(app);
    const responses = await Promise.all([1, 2, 3].map((uptime) => beat(device, withUptime(uptime))));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200]);
    expect((await telemetryOf(device.id)).map((row) => row.uptime).sort()).toEqual([1, 2, 3]);
    const [row] = await sql<{ count: number }[]>`
      select heartbeat_window_count as count from devices where id = ${device.id}`;
    expect(row!.count).toBe(3);
    // The rate limit still counts every one: 2 more pass, then 429.
    const more = await Promise.all([4, 5, 6, 7].map((uptime) => beat(device, withUptime(uptime))));
    expect(more.map((r) => r.status).sort()).toEqual([200, 200, 429, 429]);
    expect(await telemetryOf(device.id)).toHaveLength(RATE_LIMIT);
  });

  test("bad heartbeats among good ones get their own errors and cost the others nothing", async () => {
    const good = await Promise.all(Array.from({ length: 6 }, () => approvedDevice(app)));
    const rejected = (await register(app)).body.data;
    await rejectDevices(sql, [rejected.id]);
    const pending = (await register(app)).body.data;
    const wrongKey = await approvedDevice(app);
    const requests = [
      ...good.map((device, i) => beat(device, withUptime(i))),
      app.fetch(heartbeatUrl(rejected.id, "anything"), json(sampleHeartbeat())),
      app.fetch(heartbeatUrl(pending.id, "anything"), json(sampleHeartbeat())),
      beat({ ...wrongKey, token: `${wrongKey.token}x` }),
      beat(good[0]!, { telemetry: "not an object" }),
      app.fetch(heartbeatUrl("8a1b6a4e-59f3-4f5e-9d59-5c8cf3b2c001", "whatever"), json(sampleHeartbeat())),
    ];
    const responses = await Promise.all(requests);
    const codes = await Promise.all(
      responses.slice(good.length).map(async (r) => [r.status, ((await r.json()) as any).error?.code]),
    );
    expect(responses.slice(0, good.length).map((r) => r.status)).toEqual(good.map(() => 200));
    expect(codes).toEqual([
      [403, "device_not_approved"],
      [403, "device_not_approved"],
      [401, "invalid_api_key"],
      [400, "invalid_request"],
      [404, "device_not_found"],
    ]);
    for (const [i, device] of good.entries())
      expect((await telemetryOf(device.id)).map((row) => row.uptime)).toEqual([i]);
    expect(await telemetryOf(wrongKey.id)).toHaveLength(0);
  });

  test("a batch failing as a whole is retried heartbeat by heartbeat: only the failing one fails", async () => {
    const devices = await Promise.all(Array.from({ length: 12 }, () => approvedDevice(app)));
    const responses = await Promise.all(
      devices.map((device, i) => beat(device, withUptime(i, i === 5 ? { poison: true } : {}))),
    );
    expect(responses.map((r) => r.status)).toEqual(devices.map((_, i) => (i === 5 ? 500 : 200)));
    expect(((await responses[5]!.json()) as any).error.code).toBe("internal_error");
    for (const [i, device] of devices.entries())
      expect((await telemetryOf(device.id)).map((row) => row.uptime)).toEqual(i === 5 ? [] : [i]);
    // The failed heartbeat changed nothing: its device was not marked seen.
    const [row] = await sql<{ seen: boolean }[]>`
      select last_seen_at is not null as seen from devices where id = ${devices[5]!.id}`;
    expect(row!.seen).toBe(false);
  });

  test("each heartbeat gets exactly its own device's commands, and a claim racing a cancel delivers it at most once", async () => {
    const devices = await Promise.all(Array.from({ length: 8 }, () => approvedDevice(app)));
    const queued = new Map<string, string[]>();
    for (const device of devices) {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++)
        ids.push(
          (await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: 600 })).id,
        );
      queued.set(device.id, ids);
    }
    const replies = await Promise.all(
      devices.map(async (device) => {
        const response = await beat(device);
        return ((await response.json()) as { data: { commands: { command_id: string }[] } }).data.commands;
      }),
    );
    for (const [i, device] of devices.entries())
      expect(replies[i]!.map((c) => c.command_id)).toEqual(queued.get(device.id)!);

    // Races: each round queues one command, then a heartbeat and a cancel run together.
    for (let round = 0; round < 10; round++) {
      const device = devices[round % devices.length]!;
      const command = await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: 600 });
      const [response, cancelled] = await Promise.all([beat(device), cancelCommand(sql, command.id)]);
      const delivered = ((await response.json()) as { data: { commands: { command_id: string }[] } }).data
        .commands;
      const got = delivered.some((c) => c.command_id === command.id);
      expect(got ? "delivered" : "cancelled").toBe(cancelled === "cancelled" ? "cancelled" : "delivered");
      const [row] = await sql<
        { n: number }[]
      >`select count(*)::int as n from pending_commands where id = ${command.id}`;
      expect(row!.n).toBe(got ? 1 : 0);
    }
  });

  test("device rows leave room on their pages, so a heartbeat's update stays heap-only", async () => {
    const [row] = await sql<{ options: string[] }[]>`
      select reloptions as options from pg_class where relname = 'devices' and relkind = 'r'`;
    expect(row!.options).toContain("fillfactor=70");
  });

  test("in one batch, only the device with a remote-access lease gets the token and the fast-poll hint", async () => {
    const devices = await Promise.all(Array.from({ length: 6 }, () => approvedDevice(app)));
    await Promise.all(devices.map((device) => beat(device))); // online
    await openLease(sql, {
      deviceId: devices[2]!.id,
      ownerKind: "api",
      holder: "batch test",
      ttlSeconds: 300,
      maxMinutes: 60,
      onlineWindowSeconds: 300,
    });
    const replies = await Promise.all(
      devices.map(
        async (device) => ((await (await beat(device)).json()) as { data: Record<string, unknown> }).data,
      ),
    );
    for (const [i, reply] of replies.entries()) {
      if (i === 2) {
        expect(reply.remote_access_token).toEqual(expect.any(String));
        expect(reply.poll_interval_seconds).toBe(5);
        expect(reply.tunnel_host_key).toMatch(/^SHA256:/);
      } else expect(reply).toEqual({ commands: [] });
    }
  });

  test("a device flagged for remote access whose lease is gone gets a plain reply, not an error", async () => {
    const device = await approvedDevice(app);
    await sql`update devices set remote_access_requested = true where id = ${device.id}`;
    const response = await beat(device);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: { commands: [] } });
  });
});
