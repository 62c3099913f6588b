// Rules scoped to a saved view, a fleet query or the whole fleet (docs/alerts.md, _Scope_): membership
// is whoever matches when the batch is evaluated, so tagging a device (or changing the view's query)
// flips whether the rule fires for it; one statement decides every view and query scope of a batch.
import { afterAll, describe, expect, test } from "bun:test";
import { evaluateAlerts } from "../../modules/alerts/evaluation";
import {
  createRule,
  deleteRule,
  RuleValidationError,
  rulesUsingView,
  updateRule,
} from "../../modules/alerts/rules";
import { addTags, createView, deleteView, removeTags, updateView } from "../../modules/fleet/service";
import { connectDatabase } from "../../modules/platform/database";
import { AppError } from "../../modules/platform/errors";
import { startTestApp } from "../helpers/app";
import { beat, openAlerts, sensorDevice } from "./helpers";

// Web role only: evaluation runs when the test calls it.
const app = await startTestApp({ OUTPOST_ROLE: "web" });
afterAll(() => app.stop());
const sql = app.database.sql;
const evaluate = () => evaluateAlerts(sql, app.config, { settleMs: -5000 });
const firing = async (deviceId: string) =>
  (await openAlerts(sql, deviceId)).filter((a) => a.status === "active").map((a) => a.rule_id);

const hot = (name: string, product: string, scope: Record<string, unknown>) =>
  createRule(sql, {
    name,
    product_name: product,
    condition_field: "sensor.temp",
    operator: ">",
    threshold_value: "50",
    ...scope,
  });

describe("rule scopes", () => {
  test("a view scope follows the view: tagging a device, or changing the view's query, flips whether it fires", async () => {
    const a = await sensorDevice(app, "sc-view");
    const b = await sensorDevice(app, "sc-view");
    const view = await createView(app.database, { name: "Hall 1", query: "tag:hall=1" }, "test");
    const rule = await hot("Hall 1 hot", "sc-view", { scope_type: "view", scope_view: "hall 1" });
    expect(rule).toMatchObject({ scopeType: "view", scopeViewId: view.id, scopeViewName: "Hall 1" });
    await addTags(sql, [a.id], [{ key: "hall", value: "1" }]);
    await beat(app, a, { temp: 60 });
    await beat(app, b, { temp: 60 });
    await evaluate();
    expect(await firing(a.id)).toEqual([rule.id]);
    expect(await firing(b.id)).toEqual([]);

    // b joins the view by a tag; a leaves it (its open alert stays, as history, until resolved).
    await addTags(sql, [b.id], [{ key: "hall", value: "1" }]);
    await removeTags(sql, [a.id], ["hall"]);
    await beat(app, b, { temp: 61 });
    await evaluate();
    expect(await firing(b.id)).toEqual([rule.id]);

    // The view's query changes: its members are whoever matches the new one.
    const c = await sensorDevice(app, "sc-view");
    await addTags(sql, [c.id], [{ key: "hall", value: "2" }]);
    await updateView(app.database, view.id, { name: "Hall 1", query: "tag:hall=2" });
    await beat(app, c, { temp: 70 });
    await evaluate();
    expect(await firing(c.id)).toEqual([rule.id]);
  });

  test("a query scope is stored and matches across products; a fleet scope watches every approved device", async () => {
    const mine = await sensorDevice(app, "sc-q1");
    const other = await sensorDevice(app, "sc-q2");
    const untagged = await sensorDevice(app, "sc-q2");
    await addTags(sql, [mine.id, other.id], [{ key: "env", value: "prod" }]);
    const byQuery = await hot("Prod hot", "sc-q1", { scope_type: "query", scope_query: " tag:env=prod " });
    expect(byQuery).toMatchObject({ scopeType: "query", scopeQuery: "tag:env=prod" });
    const fleet = await hot("Anything hot", "sc-q1", { scope_type: "fleet" });
    for (const device of [mine, other, untagged]) await beat(app, device, { temp: 80 });
    await evaluate();
    expect(await firing(mine.id)).toEqual([byQuery.id, fleet.id]);
    expect(await firing(other.id)).toEqual([byQuery.id, fleet.id]);
    expect(await firing(untagged.id)).toEqual([fleet.id]);
    await deleteRule(sql, fleet.id); // the later tests' devices are not its business
  });

  test("a product scope (the default) and a device list keep their meaning", async () => {
    const a = await sensorDevice(app, "sc-p");
    const b = await sensorDevice(app, "sc-p");
    const product = await hot("Product hot", "sc-p", {});
    const listed = await hot("Listed hot", "sc-p", { device_ids: [b.id] });
    expect(product.scopeType).toBe("product");
    expect(listed).toMatchObject({ scopeType: "devices", deviceIds: [b.id] });
    await beat(app, a, { temp: 90 });
    await beat(app, b, { temp: 90 });
    await evaluate();
    expect(await firing(a.id)).toEqual([product.id]);
    expect(await firing(b.id)).toEqual([product.id, listed.id]);
  });

  test("a bad query or an unknown view is refused at save, pointing at the bad token; nothing is stored", async () => {
    await sensorDevice(app, "sc-bad");
    const refusal = async (scope: Record<string, unknown>) => {
      const error = await hot(`Bad ${JSON.stringify(scope)}`, "sc-bad", scope).catch((e) => e);
      expect(error).toBeInstanceOf(RuleValidationError);
      return (error as RuleValidationError).fields;
    };
    expect(await refusal({ scope_type: "query", scope_query: "tag:env=prod stauts:online" })).toEqual({
      scope_query:
        'Unknown key "stauts": use tag:, status:, approval:, product:, last_seen: or put the text in quotes (at character 14)',
    });
    expect(await refusal({ scope_type: "query", scope_query: "" })).toEqual({
      scope_query: "Enter a fleet query, e.g. tag:site=berlin status:online.",
    });
    expect(await refusal({ scope_type: "view", scope_view: "No such view" })).toEqual({
      scope_view: 'No saved view "No such view".',
    });
    expect(await refusal({ scope_type: "everything" })).toEqual({
      scope_type: "Choose the scope: fleet, product, devices, view, query.",
    });
    expect(await refusal({ scope_type: "devices" })).toEqual({
      device_ids: "List device ids (UUIDs): at least one, at most 500.",
    });
    const [{ n }] = await sql<
      { n: number }[]
    >`select count(*)::int as n from alert_rules where name like 'Bad %'`;
    expect(n).toBe(0);
  });

  test("an edit changes the scope; a view in use cannot be deleted, and the refusal names its rules", async () => {
    await sensorDevice(app, "sc-del");
    const view = await createView(app.database, { name: "Doomed", query: "tag:x" }, "test");
    const rule = await hot("Doomed rule", "sc-del", { scope_type: "view", scope_view: view.id });
    const usersOf = async (id: string) =>
      (await rulesUsingView(sql, id)).map((r) => ({ kind: "alert rule", id: String(r.id), name: r.name }));
    const refused = await deleteView(app.database, view.id, usersOf).catch((e) => e);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ status: 409, code: "view_in_use" });
    expect(refused.message).toBe(
      'The view "Doomed" is the scope of alert rule "Doomed rule": give them another scope first.',
    );
    // Without the check (a save racing the delete), the foreign key refuses it all the same.
    expect(await deleteView(app.database, view.id).catch((e) => e)).toMatchObject({ code: "view_in_use" });

    const edited = await updateRule(sql, rule.id, { scope_type: "query", scope_query: "tag:x" });
    expect(edited).toMatchObject({ scopeType: "query", scopeViewId: null, scopeQuery: "tag:x" });
    expect((await deleteView(app.database, view.id, usersOf)).id).toBe(view.id);
  });

  test("one statement decides every view and query scope of a batch, however many rules", async () => {
    const devices = [await sensorDevice(app, "sc-n"), await sensorDevice(app, "sc-n")];
    const view = await createView(app.database, { name: "Counted", query: "tag:counted" }, "test");
    await addTags(sql, [devices[0]!.id], [{ key: "counted", value: "" }]);
    for (let i = 0; i < 12; i++)
      await hot(
        `Counted ${i}`,
        "sc-n",
        i % 2
          ? { scope_type: "view", scope_view: view.id }
          : { scope_type: "query", scope_query: `tag:counted OR tag:n${i}` },
      );
    for (const device of devices) await beat(app, device, { temp: 99 });
    const statements: string[] = [];
    const counting = connectDatabase(app.database.url, 2, { debug: (s) => statements.push(s) });
    try {
      await evaluateAlerts(counting.sql, app.config, { settleMs: -5000 });
    } finally {
      await counting.close();
    }
    expect(statements.filter((s) => s.includes("from devices d")).length).toBe(1);
    expect((await firing(devices[0]!.id)).length).toBe(12);
    expect(await firing(devices[1]!.id)).toEqual([]);
  });
});
