// The audit log: every state-changing route is named (or deliberately left out); operators', tokens'
// and runners' changes are recorded with who, what, on what and the outcome (refusals too); sign-ins
// with the email tried; secrets never; admins read it as a page and an API.
import { afterAll, describe, expect, test } from "bun:test";
import { buildApp } from "../../app";
import auditRetentionJob from "../../jobs/audit-retention";
import { AUDITED_ROUTES, NOT_AUDITED } from "../../modules/audit/actions";
import { pruneAudit } from "../../modules/audit/service";
import { createLogger } from "../../modules/platform/logger";
import { createServices } from "../../services";
import { approvedDevice, register } from "../devices/helpers";
import { runnerHeaders, startE2EApp, writeE2EFixture } from "../e2e/fixtures";
import { form } from "../helpers/app";
import { lastEvent as lastEventOf } from "./helpers";

const app = await startE2EApp(writeE2EFixture());
afterAll(() => app.stop());
const sql = app.database.sql;

/** The newest event of `action` since `since`. */
const lastEvent = (action: string, since: Date) => lastEventOf(app, action, since);

describe("coverage", () => {
  test("every state-changing route of the app is audited or deliberately left out", () => {
    const routes = buildApp({
      ...createServices(app.config, app.database, createLogger("silent")),
      workerRunning: () => true,
    })
      .routes.filter((route) => !["GET", "HEAD", "OPTIONS", "WS"].includes(route.method))
      .map((route) => `${route.method} ${route.path}`);
    expect(routes.filter((route) => !(route in AUDITED_ROUTES) && !NOT_AUDITED.has(route))).toEqual([]);
    const stale = [...Object.keys(AUDITED_ROUTES), ...NOT_AUDITED].filter((route) => !routes.includes(route));
    expect(stale).toEqual([]);
  });
});

describe("what is recorded", () => {
  test("sign-in: success and failure, with the email tried and never the password", async () => {
    const since = new Date();
    const operator = await app.session("operator");
    const csrf = await app.fetch("/login");
    const cookie = csrf.headers.get("set-cookie")!.split(";")[0]!;
    const token = /name="_csrf" value="([^"]+)"/.exec(await csrf.text())![1]!;
    const failed = await app.fetch(
      "/login",
      form(
        { email: operator.email.toUpperCase(), password: "not-the-password-at-all", _csrf: token },
        { cookie },
      ),
    );
    expect(failed.status).toBe(401);
    const event = await lastEvent("session.sign_in_failed", since);
    expect(event).toMatchObject({ actor_kind: "anonymous", actor: operator.email, status: 401 });
    const [leak] =
      await sql`select count(*)::int as n from audit_events where audit_events::text like '%not-the-password-at-all%'`;
    expect(leak!.n).toBe(0);
  });

  test("an operator's changes: who, action, target, kept details; tokens' secrets never", async () => {
    const since = new Date();
    const admin = await app.session("admin");
    const created = await app.fetch(
      "/settings/tokens",
      form({ _csrf: admin.csrf, name: "ci-deploy", role: "operator" }, { cookie: admin.cookie }),
    );
    expect(created.status).toBe(201); // the page showing the new token once
    const tokenEvent = await lastEvent("token.create", since);
    // Exactly the kept fields: the token shown once is not among them.
    expect(tokenEvent).toMatchObject({ actor_kind: "operator", actor: admin.email });
    expect(tokenEvent.details).toEqual({ name: "ci-deploy", role: "operator" });

    const pending = await register(app);
    const apiToken = await app.token("operator");
    const approval = await app.fetch("/api/v1/devices/approval", {
      method: "POST",
      headers: { authorization: `Bearer ${apiToken}`, "content-type": "application/json" },
      body: JSON.stringify({ ids: [pending.body.data.id], approval_status: "approved" }),
    });
    expect(approval.status).toBe(200);
    const approved = await lastEvent("device.approval", since);
    expect(approved.actor_kind).toBe("token");
    expect(approved.actor).toStartWith("token test-operator-");
    // What was asked, and what it changed.
    expect(approved.details).toEqual({
      approval_status: "approved",
      ids: [pending.body.data.id],
      changed_ids: [pending.body.data.id],
    });

    const device = await approvedDevice(app);
    const operator = await app.session("operator");
    await app.fetch(
      `/devices/${device.id}/commands`,
      form({ _csrf: operator.csrf, type: "list_scripts" }, { cookie: operator.cookie }),
    );
    expect(await lastEvent("command.queue", since)).toMatchObject({
      actor: operator.email,
      target: expect.stringMatching(/^command:[0-9a-f-]{36}$/),
      details: { type: "list_scripts", device_id: device.id },
    });
  });

  test("refusals are recorded with the refused caller; anonymous probes are not", async () => {
    const since = new Date();
    const device = await approvedDevice(app);
    const viewer = await app.session("viewer");
    const refused = await app.fetch(
      `/devices/${device.id}/delete`,
      form({ _csrf: viewer.csrf }, { cookie: viewer.cookie }),
    );
    expect(refused.status).toBe(403);
    expect(await lastEvent("device.delete", since)).toMatchObject({
      actor: viewer.email,
      status: 403,
      target: `device:${device.id}`,
    });
    await app.fetch(`/api/json/devices/${device.id}`, { method: "DELETE" }); // anonymous: 401
    expect(await app.services.auditWrites.settled()).toBe(true); // the recorder is done with it
    const [anonymous] =
      await sql`select count(*)::int as n from audit_events where action = 'device.delete' and status = 401`;
    expect(anonymous!.n).toBe(0);
  });

  test("a refused request carrying NUL or a lone surrogate is still recorded, the text made storable", async () => {
    const since = new Date();
    const refused = await app.fetch("/e2e/runs", {
      method: "POST",
      headers: runnerHeaders(),
      body: JSON.stringify({ suite_id: "a\u0000b", environment_label: "c\ud800d", trigger_source: "ci" }),
    });
    expect(refused.status).toBe(400);
    expect(await lastEventOf(app, "e2e.run_create", since, 400)).toMatchObject({
      actor_kind: "runner",
      details: { suite_id: "a\ufffdb", environment_label: "c\ufffdd", trigger_source: "ci" },
    });
  });

  test("the same for a console form field, refused before its access check ran: the caller is still named", async () => {
    const since = new Date();
    const admin = await app.session("admin");
    const refused = await app.fetch(
      "/settings/tokens",
      form({ _csrf: admin.csrf, name: "ci\u0000deploy", role: "viewer\ud800" }, { cookie: admin.cookie }),
    );
    expect(refused.status).toBe(400);
    expect(await lastEventOf(app, "token.create", since, 400)).toMatchObject({
      actor: admin.email,
      details: { name: "ci\ufffddeploy", role: "viewer\ufffd" },
    });
  });

  test("E2E runners are named by their runner id", async () => {
    const since = new Date();
    const created = await app.fetch("/e2e/runs", {
      method: "POST",
      headers: runnerHeaders(),
      body: JSON.stringify({ suite_id: "smoke", environment_label: "staging", trigger_source: "ci" }),
    });
    expect(created.status).toBe(201);
    expect(await lastEvent("e2e.run_create", since)).toMatchObject({
      actor_kind: "runner",
      actor: "ci-runner",
      details: { suite_id: "smoke", environment_label: "staging", trigger_source: "ci" },
    });
    const id = ((await created.json()) as { data: { id: string } }).data.id;
    await app.fetch(`/e2e/runs/${id}/cancel`, { method: "POST", headers: runnerHeaders() });
    expect((await lastEvent("e2e.run_cancel", since)).target).toBe(`e2e_run:${id}`);
  });
});

describe("reading it", () => {
  test("GET /api/v1/audit: admins only, filters, keyset pages", async () => {
    const admin = await app.token("admin");
    const operator = await app.token("operator");
    const get = (path: string, token = admin) =>
      app.fetch(path, { headers: { authorization: `Bearer ${token}` } });
    expect((await get("/api/v1/audit", operator)).status).toBe(403);
    expect((await app.fetch("/api/v1/audit")).status).toBe(401);
    for (let i = 0; i < 3; i++) {
      const session = await app.session("viewer");
      await app.fetch("/logout", form({ _csrf: session.csrf }, { cookie: session.cookie }));
    }
    expect(await app.services.auditWrites.settled()).toBe(true); // the recorder writes after the answer
    const page1 = (await (await get("/api/v1/audit?action=session.sign_out&limit=2")).json()) as {
      data: { action: string; at: string }[];
      meta: { next_cursor: string | null };
    };
    expect(page1.data).toHaveLength(2);
    expect(page1.data.every((e) => e.action === "session.sign_out")).toBe(true);
    expect(page1.meta.next_cursor).toBeString();
    const page2 = (await (
      await get(`/api/v1/audit?action=session.sign_out&limit=2&cursor=${page1.meta.next_cursor}`)
    ).json()) as {
      data: { at: string }[];
    };
    expect(page2.data.length).toBeGreaterThanOrEqual(1);
    expect(page2.data[0]!.at <= page1.data[1]!.at).toBe(true);
    expect((await get("/api/v1/audit?from=yesterday")).status).toBe(400);
  });

  test("the page lists events for admins and filters them", async () => {
    const admin = await app.session("admin");
    const html = await (
      await app.fetch("/audit?action=session.sign_in_failed", { headers: { cookie: admin.cookie } })
    ).text();
    expect(html).toContain("session.sign_in_failed");
    expect(html).not.toContain(">token.create<");
    const operator = await app.session("operator");
    expect((await app.fetch("/audit", { headers: { cookie: operator.cookie } })).status).toBe(403);
  });

  test("retention deletes events older than the window, exactly at its boundary", async () => {
    await sql`insert into audit_events (actor_kind, actor, action, status, at) values
      ('operator', 'old@example.test', 'test.retention', 200, now() - interval '30 days' - interval '1 minute'),
      ('operator', 'new@example.test', 'test.retention', 200, now() - interval '30 days' + interval '1 minute')`;
    expect(await pruneAudit(app.database, 30)).toBeGreaterThanOrEqual(1);
    const left = await sql<
      { actor: string }[]
    >`select actor from audit_events where action = 'test.retention'`;
    expect(left.map((r) => r.actor)).toEqual(["new@example.test"]);
    // The scheduled job applies AUDIT_RETENTION_DAYS (365 by default).
    await sql`insert into audit_events (actor_kind, actor, action, status, at) values
      ('operator', 'older@example.test', 'test.retention', 200, now() - interval '366 days')`;
    await auditRetentionJob.run({}, app.services);
    const afterJob = await sql<
      { actor: string }[]
    >`select actor from audit_events where action = 'test.retention'`;
    expect(afterJob.map((r) => r.actor)).toEqual(["new@example.test"]);
  });
});
