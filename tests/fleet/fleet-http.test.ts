// The fleet's routes over real HTTP: tags, names and notes, saved views and ?q=/?view= on the device
// API, the console's forms (CSRF) and who may do what (viewers read, operators write).
import { afterAll, describe, expect, test } from "bun:test";
import { LIVE_CHANNEL } from "../../modules/live/hub";
import { approvedDevice, json, register } from "../devices/helpers";
import { startTestApp } from "../helpers/app";

const app = await startTestApp({ OUTPOST_ROLE: "web" });
afterAll(() => app.stop());

const viewer = await app.token("viewer");
const operator = await app.token("operator");
const as = (token: string, init: RequestInit = {}) => ({
  ...init,
  headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` },
});
const send = (token: string, method: string, body: unknown) => as(token, json(body, method));

async function ids(q: string, token = viewer) {
  const response = await app.fetch(`/api/v1/devices?${q}`, as(token));
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { id: string }[] }).data.map((d) => d.id);
}

describe("tags", () => {
  test("operators set and remove a device's tags; viewers read them; bad tags change nothing", async () => {
    const { id } = await approvedDevice(app);
    const tags = `/api/v1/devices/${id}/tags`;
    expect(
      (await app.fetch(tags, send(viewer, "POST", { tags: [{ key: "site", value: "x" }] }))).status,
    ).toBe(403);
    const set = await app.fetch(tags, send(operator, "POST", { tags: [{ key: "site", value: "berlin" }] }));
    expect(set.status).toBe(200);
    expect(await set.json()).toEqual({ data: { tags: [{ key: "site", value: "berlin" }], labels: {} } });
    // A key it has takes the new value.
    await app.fetch(tags, send(operator, "POST", { tags: [{ key: "site", value: "munich" }] }));
    const read = await app.fetch(tags, as(viewer));
    expect(((await read.json()) as { data: { tags: unknown } }).data.tags).toEqual([
      { key: "site", value: "munich" },
    ]);
    expect(await ids("q=tag%3Asite%3Dmunich")).toContain(id);

    for (const bad of [
      { key: "Site", value: "x" },
      { key: "env", value: " lab" },
      { key: "env", value: "x".repeat(129) },
    ]) {
      const refused = await app.fetch(tags, send(operator, "POST", { tags: [bad] }));
      expect({ bad, status: refused.status }).toEqual({ bad, status: 400 });
    }
    const del = await app.fetch(`${tags}/site`, as(operator, { method: "DELETE" }));
    expect(del.status).toBe(204);
    expect(await ids("q=tag%3Asite")).not.toContain(id);
    expect((await app.fetch(`/api/v1/devices/${crypto.randomUUID()}/tags`, as(viewer))).status).toBe(404);
  });

  test("at most 64 tags a device: the 65th is refused and nothing of that change is stored", async () => {
    const { id } = await approvedDevice(app);
    const many = Array.from({ length: 64 }, (_, i) => ({ key: `k${i}`, value: "v" }));
    const tags = `/api/v1/devices/${id}/tags`;
    expect((await app.fetch(tags, send(operator, "POST", { tags: many }))).status).toBe(200);
    const over = await app.fetch(
      tags,
      send(operator, "POST", {
        tags: [
          { key: "k0", value: "changed" },
          { key: "one-more", value: "v" },
        ],
      }),
    );
    expect(over.status).toBe(409);
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe("tag_limit_exceeded");
    const stored = (
      (await (await app.fetch(tags, as(viewer))).json()) as {
        data: { tags: { key: string; value: string }[] };
      }
    ).data.tags;
    expect(stored).toHaveLength(64);
    expect(stored.find((t) => t.key === "k0")?.value).toBe("v");
  });

  test("bulk: add to and remove from many devices at once", async () => {
    const a = (await approvedDevice(app)).id;
    const b = (await register(app)).body.data.id;
    const bulk = (body: unknown, token = operator) =>
      app.fetch("/api/v1/devices/tags", send(token, "POST", body));
    expect((await bulk({ ids: [a, b], add: [{ key: "wave", value: "1" }] }, viewer)).status).toBe(403);
    const added = await bulk({ ids: [a, b, crypto.randomUUID()], add: [{ key: "wave", value: "1" }] });
    expect(added.status).toBe(200);
    expect(((await added.json()) as { data: { changed_ids: string[] } }).data.changed_ids.sort()).toEqual(
      [a, b].sort(),
    );
    expect((await ids("q=tag%3Awave%3D1")).sort()).toEqual([a, b].sort());
    const removed = await bulk({ ids: [a], remove: ["wave"] });
    expect(((await removed.json()) as { data: { removed_count: number } }).data.removed_count).toBe(1);
    expect(await ids("q=tag%3Awave%3D1")).toEqual([b]);
  });
});

describe("names and notes", () => {
  test("an operator's display name replaces the derived name until cleared", async () => {
    const { id, mac } = await approvedDevice(app);
    const derived = `device-${mac.replaceAll(":", "").toLowerCase()}`;
    /** Devices whose free text matches, through JSON:API's filter[q] (the console's list reads the same). */
    const found = async (text: string) => {
      const response = await app.fetch(
        `/api/json/devices?filter[q]=${encodeURIComponent(`"${text}"`)}`,
        as(viewer),
      );
      expect(response.status).toBe(200);
      return ((await response.json()) as { data: { id: string }[] }).data.map((d) => d.id);
    };
    // Shown by its derived name: found by it, whole or in part.
    expect(await found(derived)).toEqual([id]);
    expect(await ids(`q=${derived.slice(3).toUpperCase()}`)).toEqual([id]);
    const profile = `/api/v1/devices/${id}/profile`;
    expect((await app.fetch(profile, send(viewer, "PATCH", { display_name: "x" }))).status).toBe(403);
    const named = await app.fetch(
      profile,
      send(operator, "PATCH", { display_name: "Pump station 7", notes: "Blue door" }),
    );
    expect(named.status).toBe(200);
    expect(((await named.json()) as { data: unknown }).data).toEqual({
      id,
      name: "Pump station 7",
      display_name: "Pump station 7",
      notes: "Blue door",
    });
    expect(await ids("q=%22station%207%22")).toEqual([id]);
    // The name it is shown by is the operator's now.
    expect(await found(derived)).toEqual([]);
    const line = await app.fetch(profile, send(operator, "PATCH", { display_name: "two\nlines" }));
    expect(line.status).toBe(400);
    const cleared = await app.fetch(profile, send(operator, "PATCH", { display_name: null }));
    const data = ((await cleared.json()) as { data: { name: string; notes: string } }).data;
    expect(data.name).toBe(derived);
    expect(data.notes).toBe("Blue door");
    expect(await found(derived)).toEqual([id]);
  });
});

describe("queries and saved views", () => {
  test("a bad query is 400 invalid_query pointing at the token", async () => {
    const response = await app.fetch(
      `/api/v1/devices?q=${encodeURIComponent("status:online stauts:x")}`,
      as(viewer),
    );
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: { code: "invalid_query", details: { field: "q", position: 14, length: 6 } },
    });
  });

  test("views: operators save, viewers list; a view's devices are whoever matches now", async () => {
    const { id } = await approvedDevice(app);
    const body = { name: "Canary wave", query: "tag:wave=canary" };
    expect((await app.fetch("/api/v1/views", send(viewer, "POST", body))).status).toBe(403);
    const created = await app.fetch("/api/v1/views", send(operator, "POST", body));
    expect(created.status).toBe(201);
    const view = ((await created.json()) as { data: { id: string; created_by: string } }).data;
    expect(view.created_by).toMatch(/^token /);
    const taken = await app.fetch("/api/v1/views", send(operator, "POST", { ...body, name: "CANARY WAVE" }));
    expect(taken.status).toBe(409);
    const bad = await app.fetch("/api/v1/views", send(operator, "POST", { name: "Bad", query: "tag:" }));
    expect(await bad.json()).toMatchObject({ error: { code: "invalid_query", details: { field: "query" } } });

    expect(await ids(`view=${view.id}`)).toEqual([]);
    await app.fetch(
      `/api/v1/devices/${id}/tags`,
      send(operator, "POST", { tags: [{ key: "wave", value: "canary" }] }),
    );
    expect(await ids(`view=${view.id}`)).toEqual([id]);
    expect(await ids(`view=${encodeURIComponent("canary wave")}`)).toEqual([id]);
    // A view and a query together: both must hold.
    expect(await ids(`view=${view.id}&q=approval%3Apending`)).toEqual([]);

    const list = await app.fetch("/api/v1/views", as(viewer));
    expect(((await list.json()) as { data: { name: string }[] }).data.map((v) => v.name)).toContain(
      "Canary wave",
    );
    const renamed = await app.fetch(
      `/api/v1/views/${view.id}`,
      send(operator, "PUT", { name: "Wave 1", query: "tag:wave" }),
    );
    expect(renamed.status).toBe(200);
    expect((await app.fetch(`/api/v1/views/${view.id}`, as(operator, { method: "DELETE" }))).status).toBe(
      204,
    );
    expect((await app.fetch(`/api/v1/devices?view=${view.id}`, as(viewer))).status).toBe(404);
    // The audit records are written after each answer: wait for them (bounded).
    let actions: string[] = [];
    for (let i = 0; i < 50 && actions.length < 3; i++) {
      if (i > 0) await Bun.sleep(50);
      const rows = await app.database.sql<{ action: string }[]>`
        select action from audit_events where target = ${`view:${view.id}`}`;
      actions = rows.map((r) => r.action).sort();
    }
    expect(actions).toEqual(["view.create", "view.delete", "view.update"]);
  });
});

describe("console forms", () => {
  test("bulk tagging from the list's selection needs an operator and the CSRF token", async () => {
    const a = (await approvedDevice(app)).id;
    const b = (await approvedDevice(app)).id;
    const post = (session: { cookie: string; csrf: string }, fields: Record<string, string>) =>
      app.fetch("/devices/bulk-tags", {
        method: "POST",
        headers: { cookie: session.cookie, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams([...Object.entries(fields), ["ids", a], ["ids", b]]).toString(),
      });
    const op = await app.session("operator");
    expect((await post(op, { tag: "rack=r1", action: "add-tag" })).status).toBe(403); // no _csrf
    expect((await post(await app.session("viewer"), { tag: "rack=r1", action: "add-tag" })).status).toBe(403);
    expect(await ids("q=tag%3Arack")).toEqual([]);
    const done = await post(op, {
      _csrf: op.csrf,
      tag: "rack=r1",
      action: "add-tag",
      return_to: "/devices?q=x",
    });
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toBe("/devices?q=x");
    expect((await ids("q=tag%3Arack%3Dr1")).sort()).toEqual([a, b].sort());
    await post(op, { _csrf: op.csrf, tag: "rack", action: "remove-tag" });
    expect(await ids("q=tag%3Arack")).toEqual([]);
  });

  test("the device list shows a query's error beside the box; the views page lists views", async () => {
    const session = await app.session("viewer");
    const page = await app.fetch(`/devices?q=${encodeURIComponent("status:online foo:bar")}`, {
      headers: { cookie: session.cookie },
    });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain("Unknown key &quot;foo&quot;");
    expect(html).toContain("at character 15");
    const op = await app.session("operator");
    const saved = await app.fetch("/views", {
      method: "POST",
      headers: { cookie: op.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: op.csrf, name: "<b>Lab</b>", query: "tag:env=lab" }).toString(),
    });
    expect(saved.status).toBe(303);
    const views = await (await app.fetch("/views", { headers: { cookie: session.cookie } })).text();
    expect(views).toContain("&lt;b&gt;Lab&lt;/b&gt;");
    expect(views).not.toContain("<b>Lab</b>");
  });
});

describe("open lists refresh", () => {
  test("a tag set or removed, a display name changed: the live channel hears `devices`", async () => {
    const heard: string[] = [];
    const listener = await app.database.sql.listen(LIVE_CHANNEL, (payload) => heard.push(payload));
    try {
      const { id } = await approvedDevice(app);
      const after = async (change: () => Promise<Response>) => {
        heard.length = 0;
        expect((await change()).status).toBeLessThan(300);
        // Notifications arrive after the commit, on the listening connection.
        for (let i = 0; i < 50 && !heard.includes("devices"); i++) await Bun.sleep(20);
        return heard.includes("devices");
      };
      const tags = `/api/v1/devices/${id}/tags`;
      expect(
        await after(() => app.fetch(tags, send(operator, "POST", { tags: [{ key: "room", value: "7" }] }))),
      ).toBe(true);
      expect(await after(() => app.fetch(`${tags}/room`, as(operator, { method: "DELETE" })))).toBe(true);
      expect(
        await after(() =>
          app.fetch(`/api/v1/devices/${id}/profile`, send(operator, "PATCH", { display_name: "Pump 7" })),
        ),
      ).toBe(true);
    } finally {
      await listener.unlisten();
    }
  });
});
