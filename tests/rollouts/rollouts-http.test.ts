// The rollouts API over real HTTP: create from ids, a query or a view; 409 on an overlap unless
// confirmed; get with counts, the per-device list and its CSV; pause, resume, cancel; who may do what;
// an audit record per rollout and per operator action; the console's form and buttons (CSRF).
import { afterAll, describe, expect, test } from "bun:test";
import { notificationsDuring } from "../console/helpers";
import { json } from "../devices/helpers";
import { form, startTestApp } from "../helpers/app";
import { answer, drive, insertDevices, script } from "./helpers";

const app = await startTestApp({ OUTPOST_ROLE: "web" });
afterAll(() => app.stop());

const viewer = await app.token("viewer");
const operator = await app.token("operator");
const as = (token: string, init: RequestInit = {}) => ({
  ...init,
  headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` },
});
const send = (token: string, body: unknown, method = "POST") => as(token, json(body, method));
type Rollout = {
  id: string;
  status: string;
  total: number;
  canary_size: number;
  counts: Record<string, number>;
};

async function create(body: unknown, token = operator) {
  const response = await app.fetch("/api/v1/rollouts", send(token, body));
  return {
    status: response.status,
    body: (await response.json()) as {
      data: Rollout;
      error?: { code: string; details: { count: number; device_ids: string[] } };
    },
  };
}

async function auditActions(target: string, count: number) {
  // The audit records are written after each answer: wait for them (bounded).
  let actions: string[] = [];
  for (let i = 0; i < 50 && actions.length < count; i++) {
    if (i > 0) await Bun.sleep(50);
    const rows = await app.database.sql<{ action: string }[]>`
      select action from audit_events where target = ${target} and status < 300 order by at`;
    actions = rows.map((r) => r.action);
  }
  return actions;
}

describe("rollouts API", () => {
  test("create from ids, act on it, read it; every step audited; viewers read only", async () => {
    const ids = await insertDevices(app.database, 4);
    const refused = await create({ action: { type: "approve" }, target: { ids } }, viewer);
    expect(refused.status).toBe(403);
    const bad = await create({ action: { type: "install_script", script: "not a script" }, target: { ids } });
    expect(bad.status).toBe(400);
    expect(await create({ action: { type: "sing" }, target: { ids } })).toMatchObject({ status: 400 });
    expect(await create({ action: { type: "approve" }, target: {} })).toMatchObject({ status: 400 });

    const created = await create({
      action: { type: "install_script", script: script("http") },
      target: { ids },
      canary_count: 1,
      concurrency: 2,
    });
    expect(created.status).toBe(201);
    const rollout = created.body.data;
    expect(rollout).toMatchObject({ status: "running", total: 4, canary_size: 1, counts: { queued: 4 } });

    await drive(app.database, rollout.id);
    await answer(app.database, ids[0]!, true);
    await drive(app.database, rollout.id); // 1 of 1 canary failed: over the 10 % threshold
    const got = await app.fetch(`/api/v1/rollouts/${rollout.id}`, as(viewer));
    expect(((await got.json()) as { data: Rollout }).data).toMatchObject({
      status: "paused",
      counts: { failed: 1, queued: 3 },
    });
    const results = await app.fetch(`/api/v1/rollouts/${rollout.id}/results?state=failed`, as(viewer));
    expect(((await results.json()) as { data: unknown[] }).data).toEqual([
      expect.objectContaining({ device_id: ids[0], state: "failed", error: "script exited 1", wave: 1 }),
    ]);
    const paged = await app.fetch(`/api/v1/rollouts/${rollout.id}/results?limit=3`, as(viewer));
    const first = (await paged.json()) as { data: { device_id: string }[]; next_cursor: string };
    const rest = await app.fetch(
      `/api/v1/rollouts/${rollout.id}/results?limit=3&cursor=${first.next_cursor}`,
      as(viewer),
    );
    const second = (await rest.json()) as { data: { device_id: string }[]; next_cursor: null };
    expect([...first.data, ...second.data].map((t) => t.device_id)).toEqual(ids);
    expect(second.next_cursor).toBeNull();

    const csv = await app.fetch(`/api/v1/rollouts/${rollout.id}/results.csv`, as(viewer));
    expect(csv.headers.get("content-type")).toStartWith("text/csv");
    const lines = (await csv.text()).trim().split("\r\n");
    expect(lines[0]).toStartWith("device_id,device_name,wave,state");
    expect(lines.length).toBe(5);
    expect(lines[1]).toContain("failed");

    const act = (action: string, token = operator) =>
      app.fetch(`/api/v1/rollouts/${rollout.id}/${action}`, send(token, {}));
    expect((await act("resume", viewer)).status).toBe(403);
    expect((await act("pause")).status).toBe(409); // paused already
    expect((await act("resume")).status).toBe(200);
    expect((await act("pause")).status).toBe(200);
    const cancelled = await act("cancel");
    expect(((await cancelled.json()) as { data: Rollout }).data).toMatchObject({ status: "cancelled" });
    expect((await auditActions(`rollout:${rollout.id}`, 4)).sort()).toEqual([
      "rollout.cancel",
      "rollout.create",
      "rollout.pause",
      "rollout.resume",
    ]);
    const list = await app.fetch("/api/v1/rollouts?status=cancelled", as(viewer));
    expect(((await list.json()) as { data: Rollout[] }).data.map((r) => r.id)).toContain(rollout.id);
    expect((await app.fetch(`/api/v1/rollouts/${crypto.randomUUID()}`, as(viewer))).status).toBe(404);
  });

  test("a query or a view is resolved once; an overlap with an active rollout is 409 unless confirmed", async () => {
    const ids = await insertDevices(app.database, 3);
    for (const id of ids)
      await app.fetch(`/api/v1/devices/${id}/tags`, send(operator, { tags: [{ key: "ring", value: "q" }] }));
    const first = await create({
      action: { type: "add_tag", tag: { key: "x", value: "1" } },
      target: { q: "tag:ring=q" },
    });
    expect(first.body.data.total).toBe(3);
    const view = await app.fetch("/api/v1/views", send(operator, { name: "ring q", query: "tag:ring=q" }));
    expect(view.status).toBe(201);
    const overlap = await create({ action: { type: "remove_tag", key: "x" }, target: { view: "ring q" } });
    expect(overlap.status).toBe(409);
    expect(overlap.body.error).toMatchObject({ code: "rollout_overlap", details: { count: 3 } });
    expect(overlap.body.error!.details.device_ids.sort()).toEqual([...ids].sort());
    const confirmed = await create({
      action: { type: "remove_tag", key: "x" },
      target: { view: "ring q" },
      confirm_overlap: true,
    });
    expect(confirmed.status).toBe(201);
    // The first rollout finishes: its devices no longer overlap.
    await drive(app.database, first.body.data.id);
    await drive(app.database, confirmed.body.data.id);
    expect((await create({ action: { type: "approve" }, target: { q: "tag:ring=q" } })).status).toBe(201);
    expect((await create({ action: { type: "approve" }, target: { q: "stauts:x" } })).status).toBe(400);
  });
});

describe("console", () => {
  test("the form starts a rollout; an overlap is shown and asked about; buttons need the CSRF token", async () => {
    const ids = await insertDevices(app.database, 2);
    const session = await app.session("operator");
    const post = (path: string, fields: Record<string, string>, csrf = session.csrf) =>
      app.fetch(path, form({ _csrf: csrf, ...fields }, { cookie: session.cookie }));
    const fields = {
      action: "add_tag",
      tag: "ring=c",
      ids: ids.join(","),
      canary: "1",
      concurrency: "5",
      failure_threshold: "10",
      deadline_hours: "2",
    };
    const started = await post("/rollouts", fields);
    expect(started.status).toBe(303);
    const location = started.headers.get("location")!;
    expect(location).toMatch(/^\/rollouts\/[0-9a-f-]{36}$/);
    const again = await post("/rollouts", fields);
    expect(again.status).toBe(409);
    const page = await again.text();
    expect(page).toContain("still to be acted on by another active rollout");
    expect(page).toContain('name="confirm_overlap"');
    expect((await post("/rollouts", { ...fields, concurrency: "0" })).status).toBe(422);
    expect((await post(`${location}/pause`, {}, "wrong")).status).toBe(403);
    expect((await post(`${location}/pause`, {})).status).toBe(303);
    const progress = await app.fetch(location, { headers: { cookie: session.cookie } });
    expect(await progress.text()).toContain("Resume");
    // The page's CSV link works with the console's session.
    const csv = await app.fetch(`/api/v1${location}/results.csv`, { headers: { cookie: session.cookie } });
    expect(csv.status).toBe(200);
    expect((await csv.text()).trim().split("\r\n").length).toBe(3);
  });

  test("the live channel hears a rollout change: its row, its devices' states, not a command queued for a device", async () => {
    const ids = await insertDevices(app.database, 3);
    const created = await create({
      action: { type: "install_script", script: script("live-notify") },
      target: { ids },
      concurrency: 3,
    });
    const id = created.body.data.id;
    const topic = `rollout:${id}`;
    const rolloutTopics = (seen: string[]) => seen.filter((s) => s.startsWith("rollout:"));
    // The driver moves past the empty canary wave (the rollout's row: one) and queues the three
    // commands (no device changes state: nothing more).
    const queued = await notificationsDuring(app, () => drive(app.database, id).then(() => {}));
    expect(rolloutTopics(queued)).toEqual([topic]);
    // The three answer; the driver records the three results in one statement, then completes it.
    for (const device of ids) await answer(app.database, device);
    const finished = await notificationsDuring(app, () => drive(app.database, id).then(() => {}));
    expect(rolloutTopics(finished)).toEqual([topic, topic]);
    const [row] = await app.database.sql<
      { status: string }[]
    >`select status from rollouts where id = ${id}::uuid`;
    expect(row!.status).toBe("completed");
  });
});
