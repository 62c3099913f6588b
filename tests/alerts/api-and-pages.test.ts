import { afterAll, describe, expect, test } from "bun:test";
import { evaluateAlerts } from "../../modules/alerts/evaluation";
import { ScriptedAgent } from "../helpers/agent-telemetry";
import { startTestApp } from "../helpers/app";
import { beat, SENSOR_SCRIPT, sendHeartbeat, sensorDevice } from "./helpers";

// biome-ignore lint/suspicious/noExplicitAny: documents are checked by the assertions themselves
type Json = any;

const app = await startTestApp({ OUTPOST_ROLE: "web" });
afterAll(() => app.stop());
const sql = app.database.sql;
const operator = {
  authorization: `Bearer ${await app.token("operator")}`,
  "content-type": "application/vnd.api+json",
};
const viewer = {
  authorization: `Bearer ${await app.token("viewer")}`,
  "content-type": "application/vnd.api+json",
};
const device = await sensorDevice(app, "api-prod");

const ruleDoc = (attributes: Record<string, unknown>, id?: string) => ({
  data: { type: "alert_rule", ...(id ? { id } : {}), attributes },
});
const valid = {
  name: "High temp",
  product_name: "api-prod",
  condition_field: "sensor.temp",
  operator: ">",
  threshold_value: "50",
};

async function call(
  path: string,
  method: string,
  body?: unknown,
  headers: Record<string, string> = operator,
) {
  const response = await app.fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as Json };
}
const ruleCount = async () => (await sql`select count(*)::int as n from alert_rules`)[0]!.n as number;

describe("JSON:API alert_rules", () => {
  test("create, read, update, delete; the name is unique case-insensitively and immutable", async () => {
    const created = await call("/api/json/alert_rules", "POST", ruleDoc(valid));
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      type: "alert_rule",
      attributes: {
        name: "High temp",
        field_type: "number",
        severity: "warning",
        for_minutes: 0,
        enabled: true,
        deprecated: false,
      },
    });
    // A rule is about its product's field: no schema version is kept.
    expect(created.body.data.attributes.schema_version).toBeUndefined();
    const id = created.body.data.id;
    const dup = await call("/api/json/alert_rules", "POST", ruleDoc({ ...valid, name: "HIGH TEMP" }));
    expect(dup.status).toBe(422);
    expect(dup.body.errors[0].meta.fields).toEqual({ name: "A rule with this name already exists." });

    const patched = await call(
      `/api/json/alert_rules/${id}`,
      "PATCH",
      ruleDoc({ threshold_value: 60, severity: "critical" }, id),
    );
    expect(patched.status).toBe(200);
    expect(patched.body.data.attributes).toMatchObject({ threshold_value: "60", severity: "critical" });
    const renamed = await call(`/api/json/alert_rules/${id}`, "PATCH", ruleDoc({ name: "Other" }, id));
    expect(renamed.body.errors[0].meta.fields).toEqual({ name: "The rule name cannot be changed." });

    expect(
      (await call(`/api/json/alert_rules/${id}`, "GET", undefined, viewer)).body.data.attributes
        .threshold_value,
    ).toBe("60");
    expect(
      (await call("/api/json/alert_rules", "POST", ruleDoc({ ...valid, name: "v" }), viewer)).status,
    ).toBe(403);
    expect((await call(`/api/json/alert_rules/${id}`, "DELETE")).status).toBe(204);
    expect((await call(`/api/json/alert_rules/${id}`, "GET")).status).toBe(404);
  });

  test("every field's wrong type or value gives the reference's message and stores nothing", async () => {
    const before = await ruleCount();
    const cases: [Record<string, unknown>, Record<string, string>][] = [
      [{ name: "" }, { name: "Enter a rule name." }],
      [{ name: 42 }, { name: "Enter a rule name." }],
      [{ product_name: "" }, { product_name: "Select a schema product before saving." }],
      [{ product_name: "nope" }, { product_name: "Schema options are unavailable." }],
      [{ condition_field: "" }, { condition_field: "Select a schema field." }],
      [
        { condition_field: "missing.field" },
        { condition_field: "Selected field is invalid for the active schema." },
      ],
      [{ operator: "contains" }, { operator: "Operator is not valid for the selected field type." }],
      [
        { threshold_value: "50kg" },
        { threshold_value: "Threshold value is invalid for the selected field type." },
      ],
      [
        { threshold_value: { n: 1 } },
        { threshold_value: "Threshold value is invalid for the selected field type." },
      ],
      [
        { condition_field: "sensor.state", operator: ">" },
        { operator: "Operator is not valid for the selected field type." },
      ],
      [
        { condition_field: "sensor.state", operator: "is", threshold_value: "  " },
        { threshold_value: "Threshold value is invalid for the selected field type." },
      ],
      [{ for_minutes: -1 }, { for_minutes: "Enter whole minutes from 0 to 10080." }],
      [{ for_minutes: "1.5" }, { for_minutes: "Enter whole minutes from 0 to 10080." }],
      [{ resolve_after_minutes: 99999 }, { resolve_after_minutes: "Enter whole minutes from 0 to 10080." }],
      [{ severity: "huge" }, { severity: "Choose info, warning or critical." }],
      [{ enabled: "maybe" }, { enabled: "Enabled must be true or false." }],
      [{ device_ids: ["not-a-uuid"] }, { device_ids: "List device ids (UUIDs): at least one, at most 500." }],
      [{ recipients: "not an email" }, { recipients: "Enter email addresses separated by commas." }],
      [
        { clear_threshold: "60" },
        { clear_threshold: "The clear threshold must be a number on the recovering side of the threshold." },
      ],
      [
        { condition_field: "sensor.state", operator: "is", threshold_value: "x", clear_threshold: "1" },
        { clear_threshold: "A clear threshold needs a number field and one of > >= < <=." },
      ],
    ];
    for (const [change, fields] of cases) {
      const result = await call(
        "/api/json/alert_rules",
        "POST",
        ruleDoc({ ...valid, name: `bad ${Math.random()}`, ...change }),
      );
      expect([
        change,
        result.status,
        result.body.errors?.[0].code,
        result.body.errors?.[0].meta.fields,
      ]).toEqual([change, 422, "validation_failed", fields]);
    }
    const unknown = await call(
      "/api/json/alert_rules",
      "POST",
      ruleDoc({ ...valid, name: "u", colour: "red" }),
    );
    expect([unknown.status, unknown.body.errors[0].source]).toEqual([
      400,
      { parameter: "data.attributes.colour" },
    ]);
    const wrongType = await call("/api/json/alert_rules", "POST", {
      data: { type: "alert", attributes: valid },
    });
    expect(wrongType.status).toBe(409);
    expect(await ruleCount()).toBe(before);
  });

  test("a rule whose field left its schema is Deprecated and cannot be edited", async () => {
    const other = await sensorDevice(app, "api-dep");
    const created = await call(
      "/api/json/alert_rules",
      "POST",
      ruleDoc({ ...valid, name: "Dep", product_name: "api-dep", condition_field: "sensor.box.fan" }),
    );
    expect(created.status).toBe(201);
    // The device's agent now runs a sensor script without box.fan, and announces that schema.
    const { box: _, ...properties } = SENSOR_SCRIPT.schema.properties;
    const changed = new ScriptedAgent(app.config.dataDir, "api-dep", [
      { name: "sensor", schema: { ...SENSOR_SCRIPT.schema, properties } },
    ]);
    await sendHeartbeat(app, other, await changed.heartbeat(other.id, { sensor: { temp: 1 } }));
    const id = created.body.data.id;
    expect((await call(`/api/json/alert_rules/${id}`, "GET")).body.data.attributes.deprecated).toBe(true);
    const edit = await call(`/api/json/alert_rules/${id}`, "PATCH", ruleDoc({ threshold_value: "3" }, id));
    expect([edit.status, edit.body.errors[0].code]).toEqual([409, "rule_deprecated"]);
    const page = await app.fetch(`/alerts/${id}/edit`, {
      headers: { cookie: (await app.session("operator")).cookie },
    });
    expect(await page.text()).toContain(
      "This rule references a schema field that is no longer valid for api-dep. Editing is disabled.",
    );
  });
});

describe("alerts: JSON:API, pages, CSV", () => {
  test("alerts are listed, filtered, acknowledged with a note; bad status is a typed error", async () => {
    await call("/api/json/alert_rules", "POST", ruleDoc({ ...valid, name: "Listed", severity: "critical" }));
    await beat(app, device, { temp: 99 });
    await evaluateAlerts(sql, app.config, { settleMs: -5000 });
    const list = await call(
      "/api/json/alerts?filter[status]=open&filter[severity]=critical",
      "GET",
      undefined,
      viewer,
    );
    expect(list.status).toBe(200);
    const [alert] = list.body.data;
    expect(alert).toMatchObject({
      type: "alert",
      attributes: { status: "active", severity: "critical", device_id: device.id },
    });
    const bad = await call(`/api/json/alerts/${alert.id}`, "PATCH", {
      data: { type: "alert", attributes: { status: "gone" } },
    });
    expect([bad.status, bad.body.errors[0].code]).toEqual([422, "invalid_attribute"]);
    expect(
      (
        await call(
          `/api/json/alerts/${alert.id}`,
          "PATCH",
          { data: { type: "alert", attributes: { status: "acknowledged" } } },
          viewer,
        )
      ).status,
    ).toBe(403);
    const acked = await call(`/api/json/alerts/${alert.id}`, "PATCH", {
      data: { type: "alert", attributes: { status: "acknowledged", note: "looking" } },
    });
    expect(acked.body.data.attributes).toMatchObject({ status: "acknowledged", ack_note: "looking" });
    expect(acked.body.data.attributes.acknowledged_by).toStartWith("token:");
    expect((await call("/api/json/alerts?filter[status]=bogus", "GET")).status).toBe(400);

    const csv = await app.fetch("/alerts/export.csv?status=open&severity=critical", {
      headers: { authorization: viewer.authorization },
    });
    expect(csv.headers.get("content-type")).toContain("text/csv");
    const lines = (await csv.text()).trim().split("\r\n");
    expect(lines[0]).toStartWith("id,type,status,severity,message");
    expect(lines.slice(1).map((l) => l.split(",")[0])).toEqual([alert.id]);
  });

  test("the CSV streams every matching alert across its 1,000-row pages, in the list's order", async () => {
    const device = await sensorDevice(app, "csv-many");
    await app.database.sql`
      insert into alerts (id, type, status, severity, message, device_id, triggered_at)
      select gen_random_uuid(), 'offline', 'resolved', 'info', '=cmd|' || n, ${device.id}::uuid,
        now() - make_interval(secs => n)
      from generate_series(1, 2345) as n`;
    const response = await app.fetch(`/alerts/export.csv?device=${device.id}&status=resolved`, {
      headers: { authorization: `Bearer ${await app.token("viewer")}` },
    });
    const lines = (await response.text()).trim().split("\r\n");
    expect(lines.length).toBe(1 + 2345);
    // Newest first, no row twice across page boundaries, formula-looking text neutralised.
    const messages = lines.slice(1).map((l) => l.split(",")[4]);
    expect(messages[0]).toBe("'=cmd|1");
    expect(messages.at(-1)).toBe("'=cmd|2345");
    expect(new Set(lines.slice(1).map((l) => l.split(",")[0])).size).toBe(2345);
  });

  test("rule form: reference messages on a bad save (422, nothing stored); viewers read only", async () => {
    const op = await app.session("operator");
    const before = await ruleCount();
    const form = new URLSearchParams({
      _csrf: op.csrf,
      name: "Form rule",
      product_name: "api-prod",
      condition_field: "sensor.temp",
      operator: ">",
      threshold_value: "abc",
    });
    const bad = await app.fetch("/alerts/rules", {
      method: "POST",
      headers: { cookie: op.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: form,
    });
    expect(bad.status).toBe(422);
    const html = await bad.text();
    expect(html).toContain("Threshold value is invalid for the selected field type.");
    expect(html).toContain("Unable to save rule. Correct the highlighted fields.");
    expect(await ruleCount()).toBe(before);
    form.set("threshold_value", "70");
    const ok = await app.fetch("/alerts/rules", {
      method: "POST",
      headers: { cookie: op.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: form,
    });
    expect([ok.status, ok.headers.get("location")]).toEqual([303, "/alerts?tab=rules"]);
    const rules = await (await app.fetch("/alerts?tab=rules", { headers: { cookie: op.cookie } })).text();
    expect(rules).toContain("Form rule");

    const view = await app.session("viewer");
    const page = await app.fetch("/alerts", { headers: { cookie: view.cookie } });
    expect(page.status).toBe(200);
    expect(await page.text()).not.toContain("Acknowledge selected");
    expect((await app.fetch("/alerts/new", { headers: { cookie: view.cookie } })).status).toBe(403);
    const post = await app.fetch("/alerts/bulk", {
      method: "POST",
      headers: { cookie: view.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: view.csrf, ids: device.id, action: "resolve" }),
    });
    expect(post.status).toBe(403);
  });

  test("keyset pages: every alert once, in order, for each sort", async () => {
    const paging = await sensorDevice(app, "api-pages");
    for (const [i, severity] of ["info", "critical", "warning", "critical", "info"].entries()) {
      await call(
        "/api/json/alert_rules",
        "POST",
        ruleDoc({
          ...valid,
          name: `Page ${i}`,
          product_name: "api-pages",
          threshold_value: String(i),
          severity,
        }),
      );
    }
    await beat(app, paging, { temp: 100 });
    await evaluateAlerts(sql, app.config, { settleMs: -5000 });
    for (const sort of ["newest", "oldest", "severity"]) {
      const seen: Json[] = [];
      let next: string | null = `/api/json/alerts?filter[device]=${paging.id}&sort=${sort}&page[size]=2`;
      for (let pages = 0; next && pages < 10; pages++) {
        const page = await call(next, "GET", undefined, viewer);
        expect(page.status).toBe(200);
        seen.push(...page.body.data);
        next = page.body.links.next;
      }
      expect(seen.length).toBe(5);
      expect(new Set(seen.map((a) => a.id)).size).toBe(5);
      if (sort === "severity") {
        expect(seen.map((a) => a.attributes.severity)).toEqual([
          "critical",
          "critical",
          "warning",
          "info",
          "info",
        ]);
      }
    }
    expect((await call("/api/json/alerts?page[after]=garbage", "GET", undefined, viewer)).status).toBe(400);
  });
});
