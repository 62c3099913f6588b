import { describe, expect, test } from "bun:test";
import { schemaOptionsOf } from "../../modules/builder/service";
import { json, register } from "../devices/helpers";
import { startTestApp } from "../helpers/app";

// biome-ignore lint/suspicious/noExplicitAny: response documents are checked by the assertions themselves
type Json = any;

const app = await startTestApp();
const viewer = await app.token("viewer");
const auth = { authorization: `Bearer ${viewer}` };

const atomSchema = {
  product: "atom",
  type: "object",
  properties: {
    memory: { type: "object", properties: { used_percent: { type: "number" }, total: { type: "integer" } } },
    disk: { type: "object", properties: { used_percent: { type: "number" } } },
    load_1m: { type: "number" },
    hostname: {},
  },
};

await register(app, { product_name: "atom", schema_definition: atomSchema });
await register(app, { product_name: "atom", schema_definition: atomSchema });
await register(app, {
  product_name: "atom",
  schema_definition: { ...atomSchema, version: "v2", properties: { temp: { type: "number" } } },
});
await register(app, {
  product_name: "gate",
  schema_definition: { product: "gate", properties: { a: { type: "string" } } },
});
await register(app, {
  product_name: "gate",
  schema_definition: { product: "gate", properties: { b: { type: "string" } } },
});
await register(app, { product_name: "bare" });

async function get(path: string) {
  const response = await app.fetch(path, { headers: auth });
  return { status: response.status, body: (await response.json()) as Record<string, Json> };
}

describe("builder schemas", () => {
  test("GET /api/v1/builder-schemas lists each announced product/version once, sorted", async () => {
    const { status, body } = await get("/api/v1/builder-schemas");
    expect(status).toBe(200);
    expect(body.data).toEqual([
      { schema_id: "atom", schema_version: "v1", product_name: "atom", readable: true },
      { schema_id: "atom", schema_version: "v2", product_name: "atom", readable: true },
      { schema_id: "gate", schema_version: "v1", product_name: "gate", readable: true },
    ]);
    expect((await app.fetch("/api/v1/builder-schemas")).status).toBe(401);
  });

  test("options are flattened dotted paths with labels and value types", async () => {
    const { status, body } = await get("/api/v1/builder-schemas/atom/versions/v1/options?builder=report");
    expect(status).toBe(200);
    expect(body.data.schema_id).toBe("atom");
    expect(body.data.builder).toBe("report");
    expect(body.data.load_time_ms).toBeNumber();
    expect(body.data.options).toEqual([
      {
        key: "disk.used_percent",
        label: "Used Percent (disk.used_percent)",
        value_type: "number",
        order_index: 0,
        selectable: true,
      },
      { key: "hostname", label: "Hostname", value_type: "unknown", order_index: 1, selectable: true },
      { key: "load_1m", label: "Load 1m", value_type: "number", order_index: 2, selectable: true },
      { key: "memory.total", label: "Total", value_type: "integer", order_index: 3, selectable: true },
      {
        key: "memory.used_percent",
        label: "Used Percent (memory.used_percent)",
        value_type: "number",
        order_index: 4,
        selectable: true,
      },
    ]);
    const alert = await get("/api/v1/builder-schemas/atom/versions/v1/options");
    expect(alert.body.data.builder).toBe("alert");
  });

  test("404 schema_not_found, 409 schema_conflict, 422 invalid_options_request", async () => {
    const missing = await get("/api/v1/builder-schemas/nope/versions/v1/options");
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("schema_not_found");
    const conflict = await get("/api/v1/builder-schemas/gate/versions/v1/options");
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe("schema_conflict");
    const invalid = await get("/api/v1/builder-schemas/atom/versions/v1/options?builder=dashboard");
    expect(invalid.status).toBe(422);
    expect(invalid.body.error.code).toBe("invalid_options_request");
  });

  test("a schema without properties is flattened generically", () => {
    expect(
      schemaOptionsOf({ product: "p", version: "v1", cpu: { user: 1, system: 2 }, up: true }).map(
        (o) => o.key,
      ),
    ).toEqual(["cpu.system", "cpu.user", "up"]);
    expect(schemaOptionsOf("nope")).toEqual([]);
  });
});

describe("POST /api/v1/builder-configurations/validate", () => {
  const validate = async (body: unknown) => {
    const response = await app.fetch("/api/v1/builder-configurations/validate", {
      ...json(body),
      headers: { "content-type": "application/json", ...auth },
    });
    return { status: response.status, body: (await response.json()) as Record<string, Json> };
  };

  test("valid and invalid selections", async () => {
    const ok = await validate({
      builder: "alert",
      schema_id: "atom",
      schema_version: "v1",
      selections: [
        { slot_id: "a", selected_key: "memory.used_percent" },
        { slot_id: "b", selected_key: "" },
      ],
    });
    expect(ok).toEqual({ status: 200, body: { valid: true, issues: [], cleared_slot_ids: [] } });
    const bad = await validate({
      builder: "report",
      schema_id: "atom",
      schema_version: "v1",
      selections: [
        { slot_id: "a", selected_key: "temp" },
        { slot_id: "b", selected_key: "load_1m" },
      ],
    });
    expect(bad.body).toEqual({
      valid: false,
      issues: [
        {
          issue_code: "invalid_schema_field",
          message: "Selection is not valid for active schema",
          slot_id: "a",
          blocking: true,
        },
      ],
      cleared_slot_ids: ["a"],
    });
  });

  test("unavailable and conflicting schemas are issues, not errors", async () => {
    const unavailable = await validate({
      builder: "alert",
      schema_id: "zzz",
      schema_version: "v1",
      selections: [],
    });
    expect(unavailable.body.issues[0].issue_code).toBe("schema_unavailable");
    const conflict = await validate({
      builder: "alert",
      schema_id: "gate",
      schema_version: "v1",
      selections: [],
    });
    expect(conflict.body.issues[0].issue_code).toBe("schema_conflict");
  });

  test("invalid shapes → 422 invalid_validation_payload", async () => {
    for (const body of [
      { builder: "x", schema_id: "atom", schema_version: "v1", selections: [] },
      { builder: "alert", schema_id: "", schema_version: "v1", selections: [] },
      { builder: "alert", schema_id: "atom", schema_version: "v1", selections: "a" },
      { builder: "alert", schema_id: "atom", schema_version: "v1", selections: [{ selected_key: "x" }] },
      [],
    ]) {
      const result = await validate(body);
      expect(result.status).toBe(422);
      expect(result.body.error.code).toBe("invalid_validation_payload");
    }
  });
});
