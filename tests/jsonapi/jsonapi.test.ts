import { describe, expect, test } from "bun:test";
import { approveDevices } from "../../modules/devices/service";
import { recordTelemetry } from "../../modules/telemetry/service";
import { approvedDevice, heartbeatUrl, json, register, sampleHeartbeat } from "../devices/helpers";
import { startTestApp } from "../helpers/app";

// biome-ignore lint/suspicious/noExplicitAny: response documents are checked by the assertions themselves
type Json = any;

const app = await startTestApp();
const sql = app.database.sql;
const MEDIA = "application/vnd.api+json";
const tokens = { viewer: await app.token("viewer"), operator: await app.token("operator") };

async function call(path: string, role: "viewer" | "operator" | undefined, init: RequestInit = {}) {
  const headers: Record<string, string> = { accept: MEDIA, "content-type": MEDIA };
  if (role) headers.authorization = `Bearer ${tokens[role]}`;
  const response = await app.fetch(`/api/json${path}`, { ...init, headers });
  const text = await response.text();
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    body: text ? (JSON.parse(text) as Json) : undefined,
  };
}

const doc = (data: unknown, method = "POST"): RequestInit => ({ method, body: JSON.stringify({ data }) });

describe("/api/json devices", () => {
  test("list with filter, sort and keyset pages; get", async () => {
    const product = `jp-${crypto.randomUUID().slice(0, 6)}`;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await register(app, { product_name: product })).body.data.id);
    await approveDevices(sql, [ids[0]!]);
    const list = await call(`/devices?filter[product]=${product}&sort=created_at&page[size]=2`, "viewer");
    expect(list.status).toBe(200);
    expect(list.type).toContain(MEDIA);
    expect(list.body.data.map((r: Json) => r.id)).toEqual(ids.slice(0, 2));
    expect(list.body.data[0].type).toBe("device");
    expect(list.body.data[0].attributes.product_name).toBe(product);
    expect(list.body.meta.active_filters).toEqual({ product });
    const next = await call(list.body.links.next.replace("/api/json", ""), "viewer");
    expect(next.body.data.map((r: Json) => r.id)).toEqual([ids[2]]);
    expect(next.body.links.next).toBeNull();
    const approved = await call(
      `/devices?filter[product]=${product}&filter[approval_status]=approved`,
      "viewer",
    );
    expect(approved.body.data.map((r: Json) => r.id)).toEqual([ids[0]]);
    const one = await call(`/devices/${ids[1]}`, "viewer");
    expect(one.body.data.attributes.approval_status).toBe("pending");
    expect(one.body.data.attributes.schema).toEqual({});
  });

  test("PATCH approval/product/metadata as operator; viewers get a 403 JSON:API error", async () => {
    const id = (await register(app)).body.data.id;
    const forbidden = await call(
      `/devices/${id}`,
      "viewer",
      doc({ type: "device", id, attributes: { approval_status: "approved" } }, "PATCH"),
    );
    expect(forbidden.status).toBe(403);
    expect(forbidden.type).toContain(MEDIA);
    expect(forbidden.body).toEqual({
      errors: [
        {
          status: "403",
          code: "forbidden",
          title: expect.any(String),
          detail: "JSON:API access is forbidden for your role",
        },
      ],
    });
    const anonymous = await call(`/devices/${id}`, undefined);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.errors[0].code).toBe("unauthorized");
    const patched = await call(
      `/devices/${id}`,
      "operator",
      doc(
        {
          type: "device",
          id,
          attributes: { approval_status: "approved", product_name: "edge", metadata: { rack: 4 } },
        },
        "PATCH",
      ),
    );
    expect(patched.status).toBe(200);
    expect(patched.body.data.attributes).toMatchObject({
      approval_status: "approved",
      product_name: "edge",
      metadata: { rack: 4 },
    });
    const invalid = await call(
      `/devices/${id}`,
      "operator",
      doc({ type: "device", id, attributes: { approval_status: "pending" } }, "PATCH"),
    );
    expect(invalid.status).toBe(409); // approved → rejected is a revocation (tests/devices/identity.test.ts)
    expect(invalid.body.errors[0].code).toBe("invalid_transition");
    const unknownAttr = await call(
      `/devices/${id}`,
      "operator",
      doc({ type: "device", attributes: { mac_address: "x" } }, "PATCH"),
    );
    expect(unknownAttr.status).toBe(400);
    const wrongType = await call(
      `/devices/${id}`,
      "operator",
      doc({ type: "alert", attributes: {} }, "PATCH"),
    );
    expect(wrongType.status).toBe(409);
    // The type is judged before the attributes (the schema declares it first).
    const wrongTypeAndAttribute = await call(
      `/devices/${id}`,
      "operator",
      doc({ type: "alert", attributes: { mac_address: "x" } }, "PATCH"),
    );
    expect([wrongTypeAndAttribute.status, wrongTypeAndAttribute.body.errors[0].code]).toEqual([
      409,
      "type_mismatch",
    ]);
    expect(unknownAttr.body.errors[0].source).toEqual({ parameter: "data.attributes.mac_address" });
    const malformed = await call(`/devices/${id}`, "operator", { method: "PATCH", body: "{" });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors[0].code).toBe("invalid_json");
    const missing = await call(`/devices/${crypto.randomUUID()}`, "viewer");
    expect(missing.status).toBe(404);
    expect(missing.body.errors[0].status).toBe("404");
  });

  test("DELETE removes the device, its commands and its telemetry", async () => {
    const device = await approvedDevice(app);
    await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
    expect((await call(`/devices/${device.id}`, "viewer", { method: "DELETE" })).status).toBe(403);
    const deleted = await call(`/devices/${device.id}`, "operator", { method: "DELETE" });
    expect(deleted.status).toBe(204);
    const [row] = await sql<
      { n: number }[]
    >`select count(*)::int as n from telemetry_events where device_id = ${device.id}`;
    expect(row!.n).toBe(0);
    expect((await call(`/devices/${device.id}`, "operator", { method: "DELETE" })).status).toBe(404);
  });
});

describe("/api/json pending_commands and telemetry_events", () => {
  test("create, list, get, delete while queued (409 once delivered)", async () => {
    const device = await approvedDevice(app);
    const create = (attributes: Record<string, unknown>, role: "viewer" | "operator" = "operator") =>
      call(
        "/pending_commands",
        role,
        doc({
          type: "pending_command",
          attributes,
          relationships: { device: { data: { type: "device", id: device.id } } },
        }),
      );
    expect((await create({ type: "list_scripts" }, "viewer")).status).toBe(403);
    const created = await create({ type: "list_scripts" });
    expect(created.status).toBe(201);
    expect(created.body.data.attributes.status).toBe("queued");
    expect(created.body.data.relationships.device.data.id).toBe(device.id);
    const invalid = await create({ type: "format_disk" });
    expect(invalid.status).toBe(400);
    const noDevice = await call(
      "/pending_commands",
      "operator",
      doc({ type: "pending_command", attributes: { type: "list_scripts", device_id: crypto.randomUUID() } }),
    );
    expect(noDevice.status).toBe(404);

    const listed = await call(
      `/pending_commands?filter[device_id]=${device.id}&filter[status]=queued`,
      "viewer",
    );
    expect(listed.body.data.map((r: Json) => r.id)).toEqual([created.body.data.id]);
    expect(
      (await call(`/pending_commands/${created.body.data.id}`, "viewer")).body.data.attributes.type,
    ).toBe("list_scripts");

    await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
    const conflict = await call(`/pending_commands/${created.body.data.id}`, "operator", {
      method: "DELETE",
    });
    expect(conflict.status).toBe(409);
    const second = await create({ type: "remove_script", args: ["cpu"] });
    expect(
      (await call(`/pending_commands/${second.body.data.id}`, "operator", { method: "DELETE" })).status,
    ).toBe(204);
    expect((await call(`/pending_commands/${second.body.data.id}`, "viewer")).status).toBe(404);
  });

  test("telemetry events filtered by device and time; get by id", async () => {
    const deviceId = crypto.randomUUID();
    const base = Date.now() - 10 * 60_000;
    const ids: string[] = [];
    for (let i = 0; i < 4; i++)
      ids.push(await recordTelemetry(sql, deviceId, { i }, new Date(base + i * 60_000)));
    const from = new Date(base + 60_000).toISOString();
    const list = await call(
      `/telemetry_events?filter[device_id]=${deviceId}&filter[from]=${from}&page[size]=2`,
      "viewer",
    );
    expect(list.status).toBe(200);
    expect(list.body.data.map((r: Json) => r.attributes.payload.i)).toEqual([3, 2]);
    const next = await call(list.body.links.next.replace("/api/json", ""), "viewer");
    expect(next.body.data.map((r: Json) => r.attributes.payload.i)).toEqual([1]);
    const one = await call(`/telemetry_events/${ids[0]}`, "viewer");
    expect(one.body.data).toMatchObject({
      type: "telemetry_event",
      id: ids[0],
      attributes: { device_id: deviceId, payload: { i: 0 } },
    });
    expect((await call(`/telemetry_events/${crypto.randomUUID()}`, "viewer")).status).toBe(404);
    const badTime = await call("/telemetry_events?filter[from]=yesterday", "viewer");
    expect(badTime.status).toBe(400);
    expect(badTime.body.errors[0].source).toEqual({ parameter: "filter[from]" });
  });

  test("unknown /api/json paths answer with a JSON:API 404", async () => {
    const response = await call("/nothing_here", "viewer");
    expect(response.status).toBe(404);
    expect(response.body.errors[0].status).toBe("404");
  });
});
