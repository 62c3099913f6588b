// Scopes over HTTP (docs/fleet.md, _Scopes of rules and reports_): a report scoped to a view has
// exactly the view's devices' rows, and follows the view as tags change; a query scope is checked at
// save with the bad token's place; JSON:API rules take a view by name and show it; a view in use
// cannot be deleted, and the refusal names what uses it.
import { afterAll, describe, expect, test } from "bun:test";
import { json } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { seedTwoProducts } from "../reports/fixtures";

// biome-ignore lint/suspicious/noExplicitAny: response documents are checked by the assertions themselves
type Json = any;

const app = await startTestApp({ OUTPOST_ROLE: "web" });
afterAll(() => app.stop());
const ids = await seedTwoProducts(app);
const operator = { authorization: `Bearer ${await app.token("operator")}` };

async function call(path: string, init: RequestInit = {}) {
  const response = await app.fetch(path, { ...init, headers: { ...operator, ...(init.headers ?? {}) } });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as Json };
}
const tag = (deviceIds: string[], add: { key: string; value: string }[], remove: string[] = []) =>
  call("/api/v1/devices/tags", json({ ids: deviceIds, add, remove }));
const jsonApi = (body: unknown, method = "POST") => ({
  method,
  headers: { "content-type": "application/vnd.api+json" },
  body: JSON.stringify(body),
});

const view = await call("/api/v1/views", json({ name: "Picked", query: "tag:pick=yes" }));
await tag([ids.a, ids.g], [{ key: "pick", value: "yes" }]);

/** The devices with rows in the report's per-device results. */
async function devicesOf(reportId: string): Promise<string[]> {
  const results = await call(`/api/v1/reports/${reportId}/results?mode=per_device`);
  expect(results.status).toBe(200);
  return results.body.data.rows.map((r: { device_id: string }) => r.device_id).sort();
}

describe("report scopes", () => {
  test("a report scoped to a view has exactly the view's devices' rows, and follows its members", async () => {
    expect(view.status).toBe(201);
    const created = await call(
      "/api/v1/reports",
      json({
        name: "Picked CPU",
        config: {
          schema_id: null,
          fields: [{ path: "cpu.usage_pct" }],
          scope: { type: "view", view: "picked" },
        },
      }),
    );
    expect(created.status).toBe(201);
    expect(created.body.data.config.scope).toEqual({ type: "view", view: view.body.data.id });
    const id = created.body.data.id;
    expect(await devicesOf(id)).toEqual([ids.a, ids.g].sort());
    const raw = await call(`/api/v1/reports/${id}/results?limit=1000`);
    const rawDevices = new Set(raw.body.data.rows.map((r: { device_id: string }) => r.device_id));
    expect([...rawDevices].sort()).toEqual([ids.a, ids.g].sort());
    expect(raw.body.data.rows.length).toBe(12); // six heartbeats each

    await tag([ids.b], [{ key: "pick", value: "yes" }]);
    await tag([ids.g], [], ["pick"]);
    expect(await devicesOf(id)).toEqual([ids.a, ids.b].sort());
  });

  test("a query scope is stored; a bad one is a 422 pointing at the bad token; old reports read their product", async () => {
    const byQuery = await call(
      "/api/v1/reports",
      json({
        name: "Gate by query",
        config: {
          schema_id: null,
          fields: [{ path: "cpu.usage_pct" }],
          scope: { type: "query", query: "product:gate" },
        },
      }),
    );
    expect(byQuery.status).toBe(201);
    expect(await devicesOf(byQuery.body.data.id)).toEqual([ids.g]);

    const bad = await call(
      "/api/v1/reports",
      json({
        name: "Bad query",
        config: {
          schema_id: null,
          fields: [{ path: "cpu.usage_pct" }],
          scope: { type: "query", query: "product:gate stauts:x" },
        },
      }),
    );
    expect(bad.status).toBe(422);
    expect(bad.body.error.details.errors).toEqual({
      "scope.query":
        'Unknown key "stauts": use tag:, status:, approval:, product:, last_seen: or put the text in quotes (at character 14)',
    });

    const product = await call(
      "/api/v1/reports",
      json({ name: "Atom", config: { schema_id: "atom", fields: [{ path: "cpu.usage_pct" }] } }),
    );
    expect(product.body.data.config.scope).toEqual({ type: "product" });
    expect(await devicesOf(product.body.data.id)).toEqual([ids.a, ids.b].sort());
  });
  test("the report list shows each report's scope in words, as the rule list does, escaped", async () => {
    const markup = await call(
      "/api/v1/reports",
      json({
        name: "Markup query",
        config: {
          schema_id: null,
          fields: [{ path: "cpu.usage_pct" }],
          scope: { type: "query", query: '"<img src=x onerror=alert(1)>"' },
        },
      }),
    );
    expect(markup.status).toBe(201);
    const listed = await call(
      "/api/v1/reports",
      json({
        name: "Two listed",
        config: {
          schema_id: null,
          fields: [{ path: "cpu.usage_pct" }],
          scope: { type: "devices", device_ids: [ids.a, ids.g] },
        },
      }),
    );
    expect(listed.status).toBe(201);
    const viewer = await app.session("viewer");
    const response = await app.fetch("/reports", { headers: { cookie: viewer.cookie } });
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).not.toContain("<img src=x");
    // Each row: the report's name, then (last cells) its scope and update time.
    const scopes = Object.fromEntries(
      [...html.matchAll(/<tr>.*?<\/tr>/gs)].flatMap((row) => {
        const name = /href="\/reports\/[0-9a-f-]{36}"[^>]*>([^<]*)</.exec(row[0])?.[1];
        const cells = [...row[0].matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map((c) => c[1]);
        return name ? [[name, cells.at(-2)]] : [];
      }),
    );
    expect(scopes).toEqual({
      Atom: "Every device of atom",
      "Gate by query": "Query: product:gate",
      "Markup query": "Query: &quot;&lt;img src=x onerror=alert(1)&gt;&quot;",
      "Picked CPU": "View &quot;Picked&quot;",
      "Two listed": "2 device(s)",
    });
  });
});

describe("rule scopes over JSON:API, and deleting a view in use", () => {
  test("a rule takes a view by name and shows its id and name; a bad query is a 422 naming the field", async () => {
    const rule = await call(
      "/api/json/alert_rules",
      jsonApi({
        data: {
          type: "alert_rule",
          attributes: {
            name: "Picked hot",
            product_name: "gate",
            condition_field: "temp.celsius",
            operator: ">",
            threshold_value: "80",
            scope_type: "view",
            scope_view: "Picked",
          },
        },
      }),
    );
    expect(rule.status).toBe(201);
    expect(rule.body.data.attributes).toMatchObject({
      scope_type: "view",
      scope_view: view.body.data.id,
      scope_view_name: "Picked",
      scope_query: null,
      device_ids: null,
    });
    const bad = await call(
      `/api/json/alert_rules/${rule.body.data.id}`,
      jsonApi(
        {
          data: {
            type: "alert_rule",
            id: rule.body.data.id,
            attributes: { scope_type: "query", scope_query: "tag:Site=x" },
          },
        },
        "PATCH",
      ),
    );
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0].meta.fields).toEqual({
      scope_query:
        "A tag key must be 1 to 63 characters: lower-case letters, digits and . _ / -, starting with a letter or digit (at character 5)",
    });
  });

  test("deleting a view in use is refused (409) naming its rules and reports; unused, it goes", async () => {
    const refused = await call(`/api/v1/views/${view.body.data.id}`, { method: "DELETE" });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("view_in_use");
    expect(refused.body.error.message).toBe(
      'The view "Picked" is the scope of alert rule "Picked hot", report "Picked CPU": give them another scope first.',
    );
    expect(refused.body.error.details.users.map((u: { kind: string }) => u.kind)).toEqual([
      "alert rule",
      "report",
    ]);
    expect((await call(`/api/v1/views/${view.body.data.id}`)).status).toBe(200);

    const spare = await call("/api/v1/views", json({ name: "Spare", query: "tag:x" }));
    expect((await call(`/api/v1/views/${spare.body.data.id}`, { method: "DELETE" })).status).toBe(204);
  });
});

describe("the JSON:API device resource: tags and a fleet query", () => {
  test("operators' tags and agents' labels are attributes; filter[q] and filter[view] narrow the list", async () => {
    const one = await call(`/api/json/devices/${ids.a}`);
    expect(one.status).toBe(200);
    expect(one.body.data.attributes.tags).toEqual([{ key: "pick", value: "yes" }]);
    expect(one.body.data.attributes.labels).toEqual({});

    const list = await call(`/api/json/devices?filter[q]=${encodeURIComponent("tag:pick=yes product:atom")}`);
    expect(list.status).toBe(200);
    expect(list.body.data.map((d: { id: string }) => d.id).sort()).toEqual([ids.a, ids.b].sort());
    for (const device of list.body.data)
      expect(device.attributes.tags).toEqual([{ key: "pick", value: "yes" }]);
    const byView = await call("/api/json/devices?filter[view]=Picked&filter[q]=product:gate");
    expect(byView.body.data).toEqual([]);
    const viewOnly = await call("/api/json/devices?filter[view]=Picked");
    expect(viewOnly.body.data.map((d: { id: string }) => d.id).sort()).toEqual([ids.a, ids.b].sort());

    const bad = await call(`/api/json/devices?filter[q]=${encodeURIComponent("tag:pick=yes stauts:on")}`);
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0]).toMatchObject({
      code: "invalid_query",
      meta: { field: "filter[q]", position: 13, length: 6 },
    });
    expect((await call("/api/json/devices?filter[view]=nope")).status).toBe(404);
  });
});
