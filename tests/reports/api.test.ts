import { describe, expect, test } from "bun:test";
import { json } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { seedTwoProducts } from "./fixtures";

// biome-ignore lint/suspicious/noExplicitAny: response documents are checked by the assertions themselves
type Json = any;

const app = await startTestApp();
const ids = await seedTwoProducts(app);
const operator = { authorization: `Bearer ${await app.token("operator")}` };
const viewer = { authorization: `Bearer ${await app.token("viewer")}` };

async function call(path: string, init: RequestInit = {}, auth = operator) {
  const response = await app.fetch(path, { ...init, headers: { ...auth, ...(init.headers ?? {}) } });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text,
    body: text && response.headers.get("content-type")?.includes("json") ? (JSON.parse(text) as Json) : null,
  };
}

const countReports = async () =>
  (await app.database.sql<{ n: number }[]>`select count(*)::int as n from custom_reports`)[0]!.n;

const cpuReport = {
  name: "Fleet CPU",
  config: {
    schema_id: null,
    fields: [{ path: "cpu.usage_pct", alias: "cpu" }, { path: "host.name" }],
    range: { preset: "24h" },
  },
};
const created = await call("/api/v1/reports", json(cpuReport));
const reportId: string = created.body.data.id;

describe("report definitions", () => {
  test("create stores the normalised definition; viewers read, cannot write", async () => {
    expect(created.status).toBe(201);
    expect(created.body.data.config).toMatchObject({
      source: "telemetry",
      schema_id: null,
      fields: [
        { path: "cpu.usage_pct", alias: "cpu" },
        { path: "host.name", alias: "host.name" },
      ],
      mode: "raw",
      bucket: "1h",
    });
    expect((await call(`/api/v1/reports/${reportId}`, {}, viewer)).body.data.name).toBe("Fleet CPU");
    expect((await call("/api/v1/reports", json({ ...cpuReport, name: "x" }), viewer)).status).toBe(403);
  });

  test("bad input is a typed 422 with the reference's messages and stores nothing", async () => {
    const before = await countReports();
    const dup = await call("/api/v1/reports", json({ ...cpuReport, name: "  fleet cpu " }));
    expect(dup.status).toBe(422);
    expect(dup.body.error).toMatchObject({
      code: "invalid_report",
      message: "Choose a unique report title.",
      details: { errors: { name: "Report title is already used." } },
    });
    const bad = await call(
      "/api/v1/reports",
      json({
        name: "Gate temps",
        config: {
          schema_id: "atom",
          schema_version: ids.versions.atom,
          fields: [{ path: "temp.celsius" }],
          filters: [{ path: "cpu.usage_pct", operator: ">", value: "high" }],
        },
      }),
    );
    expect(bad.status).toBe(422);
    expect(bad.body.error.details.errors).toEqual({
      "fields.0.path": "Selection is not valid for active schema",
      "filters.0.value": "Value must be a number.",
    });
    const shape = await call("/api/v1/reports", json({ name: "S", config: { fields: [], extra: 1 } }));
    expect(shape.status).toBe(422);
    expect(shape.body.error.code).toBe("invalid_report");
    // Refused by the route's schema, in the same shape as the checks after it: every field named.
    expect(shape.body.error.details).toEqual({
      field: "config.extra",
      errors: {
        "config.extra": "config.extra is not a known property",
        "config.fields": "config.fields is not valid",
      },
    });
    const unknownSchema = await call(
      "/api/v1/reports",
      json({ name: "U", config: { schema_id: "nope", fields: [{ path: "cpu.usage_pct" }] } }),
    );
    expect(unknownSchema.body.error.details.errors.schema_id).toBe("Schema options are unavailable.");
    const wrongType = await call(
      "/api/v1/reports",
      json({
        name: "W",
        config: {
          fields: [{ path: "cpu.usage_pct" }],
          filters: [{ field: "device_id", operator: "=", value: "x" }],
        },
      }),
    );
    expect(wrongType.body.error.details.errors["filters.0.value"]).toBe("Value must be a device id (UUID).");
    expect(await countReports()).toBe(before);
    const patch = await call(`/api/v1/reports/${reportId}`, { ...json({ ...cpuReport, name: "" }, "PATCH") });
    expect(patch.body.error.details.errors.name).toBe("Report Name can't be blank.");
    expect((await call(`/api/v1/reports/${reportId}`)).body.data.name).toBe("Fleet CPU");
  });

  test("unknown report → 404 report_not_found everywhere", async () => {
    for (const path of [
      "/api/v1/reports/00000000-0000-4000-8000-000000000000",
      "/api/v1/reports/not-a-uuid/results",
      "/api/v1/reports/00000000-0000-4000-8000-000000000000/results?format=csv",
    ]) {
      const r = await call(path);
      expect({ path, status: r.status, code: r.body.error.code }).toEqual({
        path,
        status: 404,
        code: "report_not_found",
      });
    }
  });

  test("list filters by name and by all contained fields, sorted by name", async () => {
    await call(
      "/api/v1/reports",
      json({
        name: "gate temperature",
        config: {
          schema_id: "gate",
          schema_version: ids.versions.gate,
          fields: [{ path: "temp.celsius" }, { path: "cpu.usage_pct" }],
        },
      }),
    );
    const names = async (q: string) =>
      (await call(`/api/v1/reports${q}`, {}, viewer)).body.data.map((r: Json) => r.name);
    expect(await names("?sort_dir=desc")).toEqual(["gate temperature", "Fleet CPU"]);
    expect(await names("?name=TEMP")).toEqual(["gate temperature"]);
    expect(await names("?field=cpu.usage_pct&field=host.name")).toEqual(["Fleet CPU"]);
    expect(await names("?field=CPU.USAGE_PCT")).toEqual(["Fleet CPU", "gate temperature"]);
  });
});

describe("results", () => {
  test("raw rows: reference shape plus meta; keyset pages walk every row once", async () => {
    const first = await call(`/api/v1/reports/${reportId}/results?limit=7`, {}, viewer);
    expect(first.status).toBe(200);
    expect(first.body.data.fields).toEqual([
      { path: "cpu.usage_pct", alias: "cpu" },
      { path: "host.name", alias: "host.name" },
    ]);
    expect(Object.keys(first.body.data.rows[0])).toEqual(["device_id", "recorded_at", "cpu", "host.name"]);
    expect(first.body.meta).toMatchObject({
      mode: "raw",
      row_count: 7,
      limit: 7,
      filters: [],
      range: { preset: "24h" },
    });
    const seen: Json[] = [...first.body.data.rows];
    let cursor = first.body.meta.next_cursor;
    for (let i = 0; cursor && i < 10; i++) {
      const page = await call(`/api/v1/reports/${reportId}/results?limit=7&cursor=${cursor}`, {}, viewer);
      seen.push(...page.body.data.rows);
      cursor = page.body.meta.next_cursor;
    }
    expect(seen.length).toBe(18);
    expect(new Set(seen.map((r) => `${r.device_id}${r.recorded_at}`)).size).toBe(18);
    // The gate device's numeric string is a number; it has no host.name.
    expect(seen.find((r) => r.device_id === ids.g)).toMatchObject({ cpu: 12.5, "host.name": null });
  });

  test("sort and filter run in SQL, across pages", async () => {
    const q =
      "sort_by=cpu&sort_dir=asc&filter_column=host.name&filter_operator=contains&filter_value=BRAVO&limit=4";
    const one = await call(`/api/v1/reports/${reportId}/results?${q}`);
    const two = await call(`/api/v1/reports/${reportId}/results?${q}&cursor=${one.body.meta.next_cursor}`);
    expect([...one.body.data.rows, ...two.body.data.rows].map((r: Json) => r.cpu)).toEqual([
      15, 25, 35, 45, 55, 65,
    ]);
    expect(two.body.meta.next_cursor).toBeNull();
    expect(one.body.meta.sort).toEqual({ by: "cpu", direction: "asc" });
    expect(one.body.meta.view_filter).toEqual({ column: "host.name", operator: "contains", value: "BRAVO" });
  });

  test("per device: last/min/max/avg of numeric columns, last text value", async () => {
    const r = await call(`/api/v1/reports/${reportId}/results?mode=per_device&sort_by=cpu.avg&sort_dir=desc`);
    expect(
      r.body.data.rows.map((x: Json) => [
        x.device_id,
        x["cpu.last"],
        x["cpu.min"],
        x["cpu.max"],
        x["cpu.avg"],
        x.events,
      ]),
    ).toEqual([
      [ids.b, 65, 15, 65, 40, 6],
      [ids.a, 60, 10, 60, 35, 6],
      [ids.g, 12.5, 12.5, 12.5, 12.5, 6],
    ]);
    expect(r.body.data.rows[0]["host.name"]).toBe("=bravo-5");
  });

  test("time buckets per device with avg/min/max, aligned to UTC", async () => {
    const r = await call(
      `/api/v1/reports/${reportId}/results?mode=buckets&bucket=1d&filter_column=device_id&filter_operator=is&filter_value=${ids.a}`,
    );
    expect(r.body.meta.bucket).toBe("1d");
    const rows = r.body.data.rows;
    expect(rows.every((x: Json) => x.device_id === ids.a && /T00:00:00\.000000Z$/.test(x.bucket))).toBe(true);
    expect(rows.reduce((n: number, x: Json) => n + x.events, 0)).toBe(6);
    const five = await call(
      `/api/v1/reports/${reportId}/results?mode=buckets&bucket=5m&filter_column=device_id&filter_operator=is&filter_value=${ids.a}`,
    );
    expect(five.body.data.rows.map((x: Json) => x["cpu.avg"])).toEqual([10, 20, 30, 40, 50, 60]);
  });

  test("per-device and bucket pages walk every device and bucket once (device-order keyset)", async () => {
    const walk = async (query: string) => {
      const rows: Json[] = [];
      let cursor = "";
      for (let i = 0; i < 30; i++) {
        const page = await call(
          `/api/v1/reports/${reportId}/results?${query}${cursor ? `&cursor=${cursor}` : ""}`,
        );
        rows.push(...page.body.data.rows);
        cursor = page.body.meta.next_cursor;
        if (!cursor) break;
      }
      return rows;
    };
    const devices = await walk("mode=per_device&limit=1");
    expect(devices.map((r) => r.device_id)).toEqual([ids.a, ids.b, ids.g].sort());
    const buckets = await walk("mode=buckets&bucket=5m&limit=4");
    expect(buckets.length).toBe(18);
    expect(new Set(buckets.map((r) => `${r.device_id} ${r.bucket}`)).size).toBe(18);
    expect(buckets.map((r) => r.device_id)).toEqual([...buckets.map((r) => r.device_id)].sort());
    const filtered = await walk(
      "mode=per_device&limit=1&filter_column=cpu.max&filter_operator=%3E&filter_value=20",
    );
    expect(filtered.map((r) => r.device_id).sort()).toEqual([ids.a, ids.b].sort());
  });

  test("definition filters on a product scope and a numeric path", async () => {
    const gate = await call(
      "/api/v1/reports",
      json({
        name: "hot gates",
        config: {
          schema_id: "gate",
          schema_version: ids.versions.gate,
          fields: [{ path: "temp.celsius", alias: "t" }],
          filters: [{ path: "temp.celsius", operator: ">=", value: 43 }],
        },
      }),
    );
    const r = await call(`/api/v1/reports/${gate.body.data.id}/results?sort_by=t&sort_dir=asc`);
    expect(r.body.data.rows.map((x: Json) => x.t)).toEqual([43, 44, 45]);
    expect(r.body.meta.filters).toEqual([{ path: "temp.celsius", operator: ">=", value: 43 }]);
    for (const mode of ["per_device", "buckets"]) {
      const scoped = await call(`/api/v1/reports/${gate.body.data.id}/results?mode=${mode}&bucket=1d`);
      // (A day bucket may split the fixture's hour at midnight UTC: count, don't index.)
      expect([...new Set(scoped.body.data.rows.map((x: Json) => x.device_id))]).toEqual([ids.g]);
      expect(scoped.body.data.rows.reduce((n: number, x: Json) => n + x.events, 0)).toBe(3);
    }
  });

  test("bad view parameters → 400 invalid_request naming the parameter", async () => {
    for (const [q, field] of [
      ["mode=pivot", "mode"],
      ["sort_by=nope", "sort_by"],
      ["filter_column=cpu&filter_operator=%3E&filter_value=abc", "filter_value"],
      ["limit=0", "limit"],
      ["cursor=garbage", "cursor"],
    ]) {
      const r = await call(`/api/v1/reports/${reportId}/results?${q}`);
      expect({ q, status: r.status, code: r.body.error.code, field: r.body.error.details.field }).toEqual({
        q,
        status: 400,
        code: "invalid_request",
        field,
      });
    }
  });

  test("CSV: header, every row, ISO times, formula cells neutralised, same rows as the table", async () => {
    const csv = await call(`/reports/${reportId}.csv?sort_by=cpu&sort_dir=asc`, {}, viewer);
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toContain("text/csv");
    expect(csv.headers.get("content-disposition")).toStartWith('attachment; filename="Fleet CPU-');
    const lines = csv.text.trimEnd().split("\r\n");
    expect(lines[0]).toBe("device_id,recorded_at,cpu,host.name");
    expect(lines.length).toBe(19);
    expect(lines.filter((l) => l.includes(",'=bravo-")).length).toBe(6);
    expect(lines[1]).toMatch(/^[0-9a-f-]{36},\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z,10,alpha-0$/);
    const table = await call(`/api/v1/reports/${reportId}/results?sort_by=cpu&sort_dir=asc&limit=1000`);
    expect(lines.slice(1).map((l) => l.split(",")[2])).toEqual(
      table.body.data.rows.map((r: Json) => String(r.cpu)),
    );
    const api = await call(`/api/v1/reports/${reportId}/results?format=csv&mode=per_device`);
    expect(api.text.split("\r\n")[0]).toBe(
      "device_id,events,last_seen,cpu.last,cpu.min,cpu.max,cpu.avg,host.name",
    );
    expect((await call(`/reports/${reportId}.csv?mode=bogus`)).status).toBe(400);
  });

  test("JSON:API custom_reports: typed resource, writes need an operator", async () => {
    const list = await call("/api/json/custom_reports", {}, viewer);
    expect(list.headers.get("content-type")).toContain("application/vnd.api+json");
    expect(list.body.data[0]).toMatchObject({
      type: "custom_report",
      attributes: { name: expect.any(String) },
    });
    const post = await call(
      "/api/json/custom_reports",
      json({
        data: {
          type: "custom_report",
          attributes: { name: "via jsonapi", config: { fields: [{ path: "cpu.usage_pct" }] } },
        },
      }),
    );
    expect(post.status).toBe(201);
    const patch = await call(
      `/api/json/custom_reports/${post.body.data.id}`,
      json({ data: { attributes: { name: "renamed" } } }, "PATCH"),
    );
    expect(patch.body.data.attributes.name).toBe("renamed");
    const bad = await call(
      "/api/json/custom_reports",
      json({ data: { attributes: { name: "renamed", config: { fields: [{ path: "cpu.usage_pct" }] } } } }),
    );
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0].code).toBe("invalid_report");
    expect(
      (await call(`/api/json/custom_reports/${post.body.data.id}`, { method: "DELETE" }, viewer)).status,
    ).toBe(403);
    expect((await call(`/api/json/custom_reports/${post.body.data.id}`, { method: "DELETE" })).status).toBe(
      204,
    );
    expect((await call(`/api/json/custom_reports/${post.body.data.id}`)).status).toBe(404);
  });
});
