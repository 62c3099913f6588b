import { describe, expect, test } from "bun:test";
import { mergedOptionsOf } from "../../modules/builder/service";
import { approvedDevice, json, register } from "../devices/helpers";
import { announcedSchema, fieldsScript } from "../helpers/agent-schema";
import { startTestApp } from "../helpers/app";

// biome-ignore lint/suspicious/noExplicitAny: response documents are checked by the assertions themselves
type Json = any;

const app = await startTestApp();
const viewer = await app.token("viewer");
const auth = { authorization: `Bearer ${viewer}` };

const schemaOf = (product: string, scripts: Parameters<typeof announcedSchema>[2]) =>
  announcedSchema(app.config.dataDir, product, scripts);

// Schemas as the agent announces them: one property per installed script. The atom devices run
// different script sets (so they announce different schema versions); the gate devices run two
// variants of a script that disagree on a field's type.
const memory = fieldsScript("memory", { used_percent: "number", total: "integer" });
const disk = fieldsScript("disk", { used_percent: "number" });
const host = fieldsScript("host", { name: "string", load_1m: "number" });
const temp = fieldsScript("temp", { celsius: "number" });
const atomBase = schemaOf("atom", [memory, disk, host]);
const atomWithTemp = schemaOf("atom", [memory, disk, host, temp]);
expect(atomWithTemp.version).not.toBe(atomBase.version);

const approvedIds = [
  (await approvedDevice(app, { product_name: "atom", schema_definition: atomBase })).id,
  (await approvedDevice(app, { product_name: "atom", schema_definition: atomBase })).id,
  (await approvedDevice(app, { product_name: "atom", schema_definition: atomWithTemp })).id,
  (
    await approvedDevice(app, {
      product_name: "gate",
      schema_definition: schemaOf("gate", [fieldsScript("relay", { state: "string", count: "integer" })]),
    })
  ).id,
  (
    await approvedDevice(app, {
      product_name: "gate",
      schema_definition: schemaOf("gate", [fieldsScript("relay", { state: "boolean", count: "number" })]),
    })
  ).id,
];
expect(approvedIds).toHaveLength(5);
// Anyone can register: pending devices' schemas never count (issue 41.3).
await register(app, {
  product_name: "atom",
  schema_definition: schemaOf("atom", [fieldsScript("memory", { used_percent: "string", total: "string" })]),
});
await register(app, {
  product_name: "ghost",
  schema_definition: schemaOf("ghost", [fieldsScript("x", { y: "number" })]),
});
await approvedDevice(app, { product_name: "bare" });

async function get(path: string) {
  const response = await app.fetch(path, { headers: auth });
  return { status: response.status, body: (await response.json()) as Record<string, Json> };
}

const option = (key: string, label: string, value_type: string, order_index: number) => ({
  key,
  label,
  value_type,
  order_index,
  selectable: true,
});

describe("builder schemas", () => {
  test("GET /api/v1/builder-schemas lists each product of approved devices once, version current", async () => {
    const { status, body } = await get("/api/v1/builder-schemas");
    expect(status).toBe(200);
    expect(body.data).toEqual([
      { schema_id: "atom", schema_version: "current", product_name: "atom", readable: true },
      { schema_id: "gate", schema_version: "current", product_name: "gate", readable: true },
    ]);
    expect((await app.fetch("/api/v1/builder-schemas")).status).toBe(401);
  });

  test("options: every field any approved device of the product declares, whatever version is named", async () => {
    const { status, body } = await get(
      "/api/v1/builder-schemas/atom/versions/current/options?builder=report",
    );
    expect(status).toBe(200);
    expect(body.data.schema_id).toBe("atom");
    expect(body.data.schema_version).toBe("current");
    expect(body.data.builder).toBe("report");
    expect(body.data.load_time_ms).toBeNumber();
    expect(body.data.options).toEqual([
      option("disk.used_percent", "Used Percent (disk.used_percent)", "number", 0),
      option("host.load_1m", "Load 1m", "number", 1),
      option("host.name", "Name", "string", 2),
      option("memory.total", "Total", "integer", 3),
      option("memory.used_percent", "Used Percent (memory.used_percent)", "number", 4),
      option("temp.celsius", "Celsius", "number", 5),
    ]);
    // A version a device announced (or a rule or report saved) answers the same fields.
    const announced = await get(`/api/v1/builder-schemas/atom/versions/${atomBase.version}/options`);
    expect(announced.body.data.builder).toBe("alert");
    expect(announced.body.data.options).toEqual(body.data.options);
  });

  test("a type approved devices disagree on is a conflict on that field, with the devices of each type", async () => {
    const { status, body } = await get("/api/v1/builder-schemas/gate/versions/current/options");
    expect(status).toBe(200);
    expect(body.data.options).toEqual([
      // integer on one device and number on the other: both numbers, no conflict.
      option("relay.count", "Count", "number", 0),
      {
        key: "relay.state",
        label: "State",
        value_type: "conflict",
        order_index: 1,
        selectable: false,
        conflict: [
          { type: "boolean", devices: 1 },
          { type: "string", devices: 1 },
        ],
      },
    ]);
  });

  test("404 schema_not_found (no approved device announces the product), 422 invalid_options_request", async () => {
    for (const product of ["nope", "ghost", "bare"]) {
      const missing = await get(`/api/v1/builder-schemas/${product}/versions/current/options`);
      expect({ product, status: missing.status, code: missing.body.error.code }).toEqual({
        product,
        status: 404,
        code: "schema_not_found",
      });
    }
    const invalid = await get("/api/v1/builder-schemas/atom/versions/current/options?builder=dashboard");
    expect(invalid.status).toBe(422);
    expect(invalid.body.error.code).toBe("invalid_options_request");
  });

  test("a schema without properties is flattened generically", () => {
    expect(
      mergedOptionsOf([
        { schema: { product: "p", version: "v1", cpu: { user: 1, system: 2 }, up: true }, devices: 1 },
      ]).map((o) => o.key),
    ).toEqual(["cpu.system", "cpu.user", "up"]);
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
        { slot_id: "b", selected_key: "host.load_1m" },
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

  test("unavailable schemas and conflicting fields are issues, not errors", async () => {
    const unavailable = await validate({
      builder: "alert",
      schema_id: "ghost",
      schema_version: "v1",
      selections: [],
    });
    expect(unavailable.body.issues[0].issue_code).toBe("schema_unavailable");
    const selections = [
      { slot_id: "a", selected_key: "relay.state" },
      { slot_id: "b", selected_key: "relay.count" },
    ];
    const issue = {
      issue_code: "schema_conflict",
      message:
        "Devices of this product declare this field with different types (boolean on 1 device, string on 1).",
      slot_id: "a",
    };
    const alert = await validate({ builder: "alert", schema_id: "gate", selections });
    expect(alert.body).toEqual({
      valid: false,
      issues: [{ ...issue, blocking: true }],
      cleared_slot_ids: [],
    });
    // A report shows a conflicting field's values as text: not blocking.
    const report = await validate({ builder: "report", schema_id: "gate", selections });
    expect(report.body).toEqual({
      valid: true,
      issues: [{ ...issue, blocking: false }],
      cleared_slot_ids: [],
    });
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
