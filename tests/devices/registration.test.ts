import { describe, expect, test } from "bun:test";
import { approveDevices, rejectDevices } from "../../modules/devices/service";
import { sha256Hex } from "../../modules/platform/crypto";
import { startTestApp } from "../helpers/app";
import { heartbeatUrl, json, newMac, register, sampleHeartbeat } from "./helpers";

const app = await startTestApp();
const sql = app.database.sql;

async function deviceCount() {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from devices`;
  return row!.n;
}

describe("POST /api/v1/devices/register", () => {
  test("a new device is pending, gets no token, and its MAC is normalised", async () => {
    const response = await app.fetch(
      "/api/v1/devices/register",
      json({
        mac_address: "0a-1b-2c-3d-4e-5f",
        product_name: "atom",
        metadata: { ip_address: "192.0.2.10", site: "north" },
        schema_definition: { product: "atom", type: "object", properties: { load: { type: "number" } } },
      }),
    );
    expect(response.status).toBe(201);
    const { data } = (await response.json()) as { data: Record<string, unknown> };
    expect(data.mac_address).toBe("0A:1B:2C:3D:4E:5F");
    expect(data.approval_status).toBe("pending");
    expect(data.product_name).toBe("atom");
    expect(data.ipv4_address).toBe("192.0.2.10");
    expect(data.metadata).toEqual({ ip_address: "192.0.2.10", site: "north" });
    expect(data.schema_version).toBe("v1");
    expect(data.last_seen_at).toBeNull();
    expect(data.online).toBe(false);
    expect(data).not.toHaveProperty("api_token");
  });

  test("re-registering a MAC updates the same device and keeps its approval", async () => {
    const first = await register(app, { product_name: "one" });
    await rejectDevices(sql, [first.body.data.id]);
    const mac = (first.body.data.mac_address as string).toLowerCase().replaceAll(":", "");
    const again = await app.fetch(
      "/api/v1/devices/register",
      json({ mac_address: mac, product_name: "two" }),
    );
    expect(again.status).toBe(201);
    const { data } = (await again.json()) as { data: Record<string, unknown> };
    expect(data.id).toBe(first.body.data.id);
    expect(data.product_name).toBe("two");
    expect(data.approval_status).toBe("rejected");
    expect(data).not.toHaveProperty("api_token");
  });

  test("an approved device gets a token; only its hash is stored; a new one invalidates the old", async () => {
    const deviceSecret = "s".repeat(43); // the device's own secret, bound by its first registration
    const first = await register(app, { device_secret: deviceSecret });
    expect(first.body.data.api_token).toBeUndefined();
    await approveDevices(sql, [first.body.data.id]);
    const mac = first.body.data.mac_address;
    const issue = async () => {
      const response = await app.fetch(
        "/api/v1/devices/register",
        json({ mac_address: mac, device_secret: deviceSecret }),
      );
      expect(response.status).toBe(201);
      return ((await response.json()) as { data: { api_token: string; approval_status: string } }).data;
    };
    const one = await issue();
    expect(one.approval_status).toBe("approved");
    expect(one.api_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const [row] = await sql<
      { api_token_hash: string }[]
    >`select api_token_hash from devices where id = ${first.body.data.id}`;
    expect(row!.api_token_hash).toBe(sha256Hex(one.api_token));
    const stored = await sql`select 1 from devices where devices::text like ${`%${one.api_token}%`}`;
    expect(stored.length).toBe(0);

    const ok = await app.fetch(heartbeatUrl(first.body.data.id, one.api_token), json(sampleHeartbeat()));
    expect(ok.status).toBe(200);
    const two = await issue();
    expect(two.api_token).not.toBe(one.api_token);
    const old = await app.fetch(heartbeatUrl(first.body.data.id, one.api_token), json(sampleHeartbeat()));
    expect(old.status).toBe(401);
    expect(((await old.json()) as { error: { code: string } }).error.code).toBe("invalid_api_key");
    const fresh = await app.fetch(heartbeatUrl(first.body.data.id, two.api_token), json(sampleHeartbeat()));
    expect(fresh.status).toBe(200);
  });

  test("concurrent registrations of an approved device: the token of the last one to commit is the valid one", async () => {
    const deviceSecret = "c".repeat(43);
    const first = await register(app, { device_secret: deviceSecret });
    await approveDevices(sql, [first.body.data.id]);
    const tokens = await Promise.all(
      Array.from({ length: 5 }, async () => {
        const response = await app.fetch(
          "/api/v1/devices/register",
          json({ mac_address: first.body.data.mac_address, device_secret: deviceSecret }),
        );
        return ((await response.json()) as { data: { api_token: string } }).data.api_token;
      }),
    );
    const [row] = await sql<
      { api_token_hash: string }[]
    >`select api_token_hash from devices where id = ${first.body.data.id}`;
    const valid = tokens.filter((token) => sha256Hex(token) === row!.api_token_hash);
    expect(valid.length).toBe(1);
  });

  const bad: [string, RequestInit, number, string][] = [
    [
      "malformed JSON",
      { method: "POST", headers: { "content-type": "application/json" }, body: "{mac" },
      400,
      "invalid_json",
    ],
    ["an empty body", { method: "POST" }, 400, "invalid_request"],
    ["a list body", json([{ mac_address: "02:00:00:00:00:01" }]), 400, "invalid_request"],
    ["no mac_address", json({ product_name: "x" }), 400, "invalid_request"],
    ["a numeric mac_address", json({ mac_address: 1234 }), 400, "invalid_request"],
    ["an invalid MAC", json({ mac_address: "zz:00:00:00:00:01" }), 400, "invalid_request"],
    ["a short MAC", json({ mac_address: "02:00:00:00:01" }), 400, "invalid_request"],
    ["a numeric product_name", json({ mac_address: newMac(), product_name: 5 }), 400, "invalid_request"],
    ["list metadata", json({ mac_address: newMac(), metadata: [1] }), 400, "invalid_request"],
    [
      "a schema without product",
      json({ mac_address: newMac(), schema_definition: { type: "object" } }),
      422,
      "invalid_schema_definition",
    ],
    [
      "a schema of type array",
      json({ mac_address: newMac(), schema_definition: { product: "p", type: "array" } }),
      422,
      "invalid_schema_definition",
    ],
    [
      "schema properties as a list",
      json({ mac_address: newMac(), schema_definition: { product: "p", properties: [] } }),
      422,
      "invalid_schema_definition",
    ],
    [
      "an over-deep schema",
      json({
        mac_address: newMac(),
        schema_definition: {
          product: "p",
          properties: { a: { b: { c: { d: { e: { f: { g: { h: {} } } } } } } } },
        },
      }),
      422,
      "invalid_schema_definition",
    ],
    [
      "a schema over 64 KiB (body under 128 KiB)",
      json({ mac_address: newMac(), schema_definition: { product: "p", description: "x".repeat(70_000) } }),
      422,
      "invalid_schema_definition",
    ],
    [
      "a schema with 257 keys",
      json({
        mac_address: newMac(),
        schema_definition: {
          product: "p",
          properties: Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`f${i}`, 1])),
        },
      }),
      422,
      "invalid_schema_definition",
    ],
    [
      "metadata over 16 KiB",
      json({ mac_address: newMac(), metadata: { blob: "x".repeat(17_000) } }),
      400,
      "invalid_request",
    ],
    [
      "metadata with 257 keys",
      json({
        mac_address: newMac(),
        metadata: Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`k${i}`, 1])),
      }),
      400,
      "invalid_request",
    ],
    [
      "over-deep metadata",
      json({ mac_address: newMac(), metadata: { a: { b: { c: { d: { e: { f: { g: 1 } } } } } } } }),
      400,
      "invalid_request",
    ],
    [
      "an oversized body",
      json({ mac_address: newMac(), metadata: { blob: "x".repeat(200_000) } }),
      413,
      "payload_too_large",
    ],
  ];
  for (const [name, init, status, code] of bad) {
    test(`${name} → ${status} ${code}, nothing written`, async () => {
      const before = await deviceCount();
      const response = await app.fetch("/api/v1/devices/register", init);
      expect(response.status).toBe(status);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe(code);
      expect(body.error.message.length).toBeGreaterThan(0);
      expect(await deviceCount()).toBe(before);
    });
  }
});
