// One audit event per kind of change the log promises, each made over real HTTP the way an operator,
// an API token or an E2E runner makes it, and asserted with its actor, target, outcome and details;
// at the end, none of the secrets those changes showed once is anywhere in the table.
import { afterAll, describe, expect, test } from "bun:test";
import { queueCommand } from "../../modules/commands/service";
import { sensorDevice } from "../alerts/helpers";
import { approvedDevice, newMac, register } from "../devices/helpers";
import { runnerHeaders, startE2EApp, writeE2EFixture } from "../e2e/fixtures";
import { form } from "../helpers/app";
import { type AuditRow, lastEvent } from "./helpers";

const app = await startE2EApp(writeE2EFixture());
afterAll(() => app.stop());
const sql = app.database.sql;

const admin = await app.session("admin");
const operator = await app.session("operator");
const adminToken = await app.token("admin");
/** Secrets the changes below showed once: none may reach the audit table. */
const shownOnce: string[] = [adminToken];

const asAdmin = (fields: Record<string, string> = {}) =>
  form({ _csrf: admin.csrf, ...fields }, { cookie: admin.cookie });
const asOperator = (fields: Record<string, string> = {}) =>
  form({ _csrf: operator.csrf, ...fields }, { cookie: operator.cookie });
const bearer = (token: string, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...(init.headers ?? {}) },
});

async function operatorId(email: string): Promise<string> {
  const [row] = await sql<{ id: string }[]>`select id::text from operators where email = ${email}`;
  return row!.id;
}

/** Does `change` (over HTTP, answering `status`), then returns the event of `action` it left. */
async function recorded(
  action: string,
  status: number,
  change: () => Promise<Response>,
  target?: string,
): Promise<AuditRow> {
  const since = new Date(Date.now() - 5);
  const response = await change();
  const body = await response.text();
  expect({ action, status: response.status }).toEqual({ action, status });
  // A one-time secret (a new token, an invited operator's password) as the kit shows it.
  for (const match of body.matchAll(/<div class="secret" id="[^"]*">([^<]+)<\/div>/g))
    shownOnce.push(match[1]!.trim());
  // (An earlier change's event, written after its own answer, may land after `since`: match the status,
  // and the target where two changes of one action and status follow each other.)
  const event = await lastEvent(app, action, since, status, target);
  return event;
}

describe("operators and sessions", () => {
  test("session.sign_in: the operator, their id as target", async () => {
    const login = await app.fetch("/login");
    const cookie = login.headers.get("set-cookie")!.split(";")[0]!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await login.text())![1]!;
    const event = await recorded("session.sign_in", 303, () =>
      app.fetch(
        "/login",
        form({ email: operator.email, password: "correct horse battery", _csrf: csrf }, { cookie }),
      ),
    );
    expect(event).toMatchObject({
      actor_kind: "operator",
      actor: operator.email,
      target: `operator:${operator.operatorId}`,
    });
  });

  test("session.sign_out", async () => {
    const leaving = await app.session("viewer");
    const event = await recorded("session.sign_out", 303, () =>
      app.fetch("/logout", form({ _csrf: leaving.csrf }, { cookie: leaving.cookie })),
    );
    expect(event).toMatchObject({ actor_kind: "operator", actor: leaving.email });
  });

  test("operator.create, .role, .disable, .enable: by the admin, on the operator", async () => {
    const email = `invited-${crypto.randomUUID().slice(0, 8)}@example.test`;
    const created = await recorded("operator.create", 201, () =>
      app.fetch("/settings/operators", asAdmin({ email, role: "viewer" })),
    );
    const id = await operatorId(email);
    expect(created).toMatchObject({
      actor: admin.email,
      target: `operator:${id}`,
      details: { email, role: "viewer" },
    });

    // A change reads as what it did: the role before and after.
    expect(
      await recorded("operator.role", 303, () =>
        app.fetch(`/settings/operators/${id}/role`, asAdmin({ role: "operator" })),
      ),
    ).toMatchObject({
      actor: admin.email,
      target: `operator:${id}`,
      details: { role: "operator", email, changes: { role: { from: "viewer", to: "operator" } } },
    });
    expect(
      await recorded("operator.disable", 303, () =>
        app.fetch(`/settings/operators/${id}/disable`, asAdmin()),
      ),
    ).toMatchObject({ actor: admin.email, target: `operator:${id}`, details: { email } });
    expect(
      await recorded("operator.enable", 303, () => app.fetch(`/settings/operators/${id}/enable`, asAdmin())),
    ).toMatchObject({ actor: admin.email, target: `operator:${id}`, details: { email } });
  });

  test("token.create and token.revoke", async () => {
    const name = `deploy-${crypto.randomUUID().slice(0, 6)}`;
    const created = await recorded("token.create", 201, () =>
      app.fetch("/settings/tokens", asAdmin({ name, role: "viewer" })),
    );
    const [token] = await sql<{ id: string }[]>`select id::text from api_tokens where name = ${name}`;
    expect(created).toMatchObject({
      actor: admin.email,
      target: `token:${token!.id}`,
      details: { name, role: "viewer" },
    });
    expect(
      await recorded("token.revoke", 303, () => app.fetch(`/settings/tokens/${token!.id}/revoke`, asAdmin())),
    ).toMatchObject({ actor: admin.email, target: `token:${token!.id}`, details: { revoked: true } });
  });
});

describe("devices and commands", () => {
  test("device.approve, device.reject: the operator, on the device", async () => {
    const first = (await register(app)).body.data.id;
    const second = (await register(app)).body.data.id;
    expect(
      await recorded("device.approve", 303, () => app.fetch(`/devices/${first}/approve`, asOperator())),
    ).toMatchObject({
      actor_kind: "operator",
      actor: operator.email,
      target: `device:${first}`,
      // The caller's address, read while the connection was there.
      address: expect.stringMatching(/127\.0\.0\.1$/),
      details: { changes: { approval_status: { from: "pending", to: "approved" } } },
    });
    expect(
      await recorded("device.reject", 303, () => app.fetch(`/devices/${second}/reject`, asOperator())),
    ).toMatchObject({
      actor: operator.email,
      target: `device:${second}`,
      details: { changes: { approval_status: { from: "pending", to: "rejected" } } },
    });
    // Approving a device that is no longer pending changes nothing, and says so.
    expect(
      await recorded(
        "device.approve",
        303,
        () => app.fetch(`/devices/${second}/approve`, asOperator()),
        `device:${second}`,
      ),
    ).toMatchObject({ target: `device:${second}`, details: { unchanged: "rejected" } });
    // Revoking the approved one: approved → rejected.
    expect(
      await recorded("device.revoke", 303, () => app.fetch(`/devices/${first}/revoke`, asOperator())),
    ).toMatchObject({
      target: `device:${first}`,
      details: { changes: { approval_status: { from: "approved", to: "rejected" } }, leases_closed: 0 },
    });
  });

  test("device.bulk and device.approval (API): the ids and the decision", async () => {
    const ids = [(await register(app)).body.data.id, (await register(app)).body.data.id];
    const body = new URLSearchParams({ _csrf: operator.csrf, action: "approve" });
    for (const id of ids) body.append("ids", id);
    const bulk = await recorded("device.bulk", 303, () =>
      app.fetch("/devices/bulk", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: operator.cookie },
        body: body.toString(),
      }),
    );
    expect(bulk).toMatchObject({
      actor: operator.email,
      details: { action: "approve", ids, changed_ids: ids },
    });
    const other = (await register(app)).body.data.id;
    const api = await recorded("device.approval", 200, () =>
      app.fetch(
        "/api/v1/devices/approval",
        bearer(adminToken, {
          method: "POST",
          body: JSON.stringify({ ids: [other], approval_status: "rejected" }),
        }),
      ),
    );
    expect(api).toMatchObject({
      actor_kind: "token",
      details: { approval_status: "rejected", ids: [other], changed_ids: [other] },
    });
  });

  test("device.preauthorize: the MAC address", async () => {
    const mac = newMac();
    const event = await recorded("device.preauthorize", 201, () =>
      app.fetch("/devices", asOperator({ mac_address: mac, product_name: "gateway", approved: "on" })),
    );
    const [device] = await sql<{ id: string }[]>`select id::text from devices where mac_address = ${mac}`;
    expect(event).toMatchObject({
      actor: operator.email,
      target: `device:${device!.id}`,
      details: { mac_address: mac, approved: "on" },
    });
  });

  test("device.update (JSON:API): the fields before → after; an approval there is device.approve; device.delete", async () => {
    const registered = (await register(app)).body.data;
    const id = registered.id;
    const patch = (attributes: Record<string, unknown>) => () =>
      app.fetch(`/api/json/devices/${id}`, {
        method: "PATCH",
        headers: {
          authorization: `Bearer ${adminToken}`,
          "content-type": "application/vnd.api+json",
          accept: "application/vnd.api+json",
        },
        body: JSON.stringify({ data: { type: "device", id, attributes } }),
      });
    const [before] = await sql<
      { product_name: string | null }[]
    >`select product_name from devices where id = ${id}`;
    const update = await recorded("device.update", 200, patch({ product_name: "renamed" }));
    expect(update).toMatchObject({
      actor_kind: "token",
      target: `device:${id}`,
      details: { changes: { product_name: { from: before!.product_name, to: "renamed" } } },
    });
    // Only what moved is listed: the metadata and approval were sent unchanged, or not at all.
    expect(Object.keys(update.details.changes as object)).toEqual(["product_name"]);
    expect(await recorded("device.approve", 200, patch({ approval_status: "approved" }))).toMatchObject({
      actor_kind: "token",
      target: `device:${id}`,
      details: { changes: { approval_status: { from: "pending", to: "approved" } } },
    });
    expect(
      await recorded("device.delete", 303, () => app.fetch(`/devices/${id}/delete`, asOperator())),
    ).toMatchObject({
      actor: operator.email,
      target: `device:${id}`,
      details: { mac_address: expect.any(String), name: expect.any(String) },
    });
  });

  test("command.queue, command.cancel, script.install: by whom, on which device; never the script", async () => {
    const device = await approvedDevice(app);
    const queued = await recorded("command.queue", 303, () =>
      app.fetch(`/devices/${device.id}/commands`, asOperator({ type: "list_scripts" })),
    );
    const [listed] = await sql<{ id: string }[]>`
      select id::text from pending_commands where device_id = ${device.id} and type = 'list_scripts'`;
    // The target is the command itself; the device and the type are in the details.
    expect(queued).toMatchObject({
      actor: operator.email,
      target: `command:${listed!.id}`,
      details: { type: "list_scripts", device_id: device.id },
    });
    // The same through the JSON:API.
    const api = await recorded("command.queue", 201, () =>
      app.fetch("/api/json/pending_commands", {
        method: "POST",
        headers: {
          authorization: `Bearer ${adminToken}`,
          "content-type": "application/vnd.api+json",
          accept: "application/vnd.api+json",
        },
        body: JSON.stringify({
          data: { type: "pending_command", attributes: { device_id: device.id, type: "list_scripts" } },
        }),
      }),
    );
    expect(api).toMatchObject({
      actor_kind: "token",
      target: expect.stringMatching(/^command:[0-9a-f-]{36}$/),
      details: { type: "list_scripts", device_id: device.id },
    });

    const source =
      "/*---\nname: audit-probe\nschema:\n  type: object\n---*/\nfunction main() { return { secretish: 42 }; }\n";
    const script = await recorded("script.install", 303, () =>
      app.fetch(`/devices/${device.id}/scripts`, asOperator({ text: source })),
    );
    expect(script).toMatchObject({
      actor: operator.email,
      target: expect.stringMatching(/^command:[0-9a-f-]{36}$/),
      details: { type: "install_script", name: "audit-probe", device_id: device.id },
    });
    expect(Object.keys(script.details).sort()).toEqual(["device_id", "name", "type"]);
    shownOnce.push("secretish: 42");

    const command = await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: 3600 });
    expect(
      await recorded("command.cancel", 303, () =>
        app.fetch(`/devices/${device.id}/commands/${command.id}/cancel`, asOperator()),
      ),
    ).toMatchObject({
      actor: operator.email,
      target: `command:${command.id}`,
      details: { type: "list_scripts", device_id: device.id },
    });
  });
});

describe("settings and jobs", () => {
  test("settings.monitoring and settings.notifications: each setting before → after, never a webhook URL", async () => {
    const save = (online: string) => () =>
      app.fetch(
        "/settings/monitoring",
        asAdmin({
          online_window_minutes: online,
          offline_alert_minutes: "15",
          telemetry_retention_days: "30",
        }),
      );
    await recorded("settings.monitoring", 303, save("5"));
    await Bun.sleep(20); // past `recorded`'s 5 ms of slack: the next event is the second save's
    const event = await recorded("settings.monitoring", 303, save("7"));
    expect(event).toMatchObject({
      actor_kind: "operator",
      actor: admin.email,
      details: { changes: { online_window_minutes: { from: 5, to: 7 } } },
    });
    expect(Object.keys(event.details.changes as object)).toEqual(["online_window_minutes"]);
    const notifications = await recorded("settings.notifications", 303, () =>
      app.fetch("/settings/notifications", asAdmin({ notification_email: "Ops@Example.test" })),
    );
    expect(notifications).toMatchObject({
      details: { changes: { notification_email: { from: null, to: "ops@example.test" } } },
    });
  });

  test("job.run: from the Jobs page and the API", async () => {
    expect(
      await recorded("job.run", 303, () => app.fetch("/jobs/run", asAdmin({ task: "audit_retention" }))),
    ).toMatchObject({
      actor: admin.email,
      target: "job:audit_retention",
      details: { task: "audit_retention", job_id: expect.any(String) },
    });
    expect(
      await recorded("job.run", 202, () =>
        app.fetch("/api/v1/jobs/audit_retention/run", bearer(adminToken, { method: "POST" })),
      ),
    ).toMatchObject({
      actor_kind: "token",
      target: "job:audit_retention",
      details: { job_id: expect.any(String) },
    });
  });
});

describe("alert rules and reports", () => {
  test("alert_rule.create, .update, .delete and report.create, .update, .delete: the id, the changed fields, the name", async () => {
    await sensorDevice(app, "audit-prod");
    const jsonApi = (method: string, body?: unknown) =>
      bearer(adminToken, {
        method,
        headers: { "content-type": "application/vnd.api+json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const attributes = {
      name: "Audit hot",
      product_name: "audit-prod",
      condition_field: "sensor.temp",
      operator: ">",
      threshold_value: "50",
    };
    const created = await recorded("alert_rule.create", 201, () =>
      app.fetch("/api/json/alert_rules", jsonApi("POST", { data: { type: "alert_rule", attributes } })),
    );
    const [rule] = await sql<{ id: string }[]>`select id::text from alert_rules where name = 'Audit hot'`;
    expect(created).toMatchObject({ target: `alert_rule:${rule!.id}`, details: { name: "Audit hot" } });
    const updated = await recorded("alert_rule.update", 200, () =>
      app.fetch(
        `/api/json/alert_rules/${rule!.id}`,
        jsonApi("PATCH", {
          data: {
            type: "alert_rule",
            id: rule!.id,
            attributes: { threshold_value: 60, severity: "critical" },
          },
        }),
      ),
    );
    expect(updated).toMatchObject({
      target: `alert_rule:${rule!.id}`,
      details: {
        name: "Audit hot",
        changes: { threshold_value: { from: "50", to: "60" }, severity: { from: "warning", to: "critical" } },
      },
    });
    expect(
      await recorded("alert_rule.delete", 204, () =>
        app.fetch(`/api/json/alert_rules/${rule!.id}`, jsonApi("DELETE")),
      ),
    ).toMatchObject({ target: `alert_rule:${rule!.id}`, details: { name: "Audit hot" } });

    const report = {
      name: "Audit temps",
      config: { schema_id: null, fields: [{ path: "sensor.temp" }], range: { preset: "24h" } },
    };
    const reportCreated = await recorded("report.create", 201, () =>
      app.fetch("/api/v1/reports", bearer(adminToken, { method: "POST", body: JSON.stringify(report) })),
    );
    const [stored] = await sql<
      { id: string }[]
    >`select id::text from custom_reports where name = 'Audit temps'`;
    expect(reportCreated).toMatchObject({ target: `report:${stored!.id}`, details: { name: "Audit temps" } });
    const reportUpdated = await recorded("report.update", 200, () =>
      app.fetch(
        `/api/v1/reports/${stored!.id}`,
        bearer(adminToken, {
          method: "PATCH",
          body: JSON.stringify({ ...report, name: "Audit temperatures" }),
        }),
      ),
    );
    expect(reportUpdated).toMatchObject({
      target: `report:${stored!.id}`,
      details: { changes: { name: { from: "Audit temps", to: "Audit temperatures" } } },
    });
    expect(Object.keys(reportUpdated.details.changes as object)).toEqual(["name"]);
    expect(
      await recorded("report.delete", 204, () =>
        app.fetch(`/api/v1/reports/${stored!.id}`, bearer(adminToken, { method: "DELETE" })),
      ),
    ).toMatchObject({ target: `report:${stored!.id}`, details: { name: "Audit temperatures" } });
  });
});

describe("E2E runs", () => {
  test("e2e.run_create, e2e.results, e2e.runs_delete: the runner, then the admin", async () => {
    const create = await recorded("e2e.run_create", 201, () =>
      app.fetch("/e2e/runs", {
        method: "POST",
        headers: runnerHeaders(),
        body: JSON.stringify({ suite_id: "smoke", environment_label: "staging", trigger_source: "ci" }),
      }),
    );
    const [run] = await sql<{ id: string; journey: string }[]>`
      select r.id::text, j.journey_id as journey from e2e_runs r join e2e_run_results j on j.run_id = r.id
      where r.environment_label = 'staging' limit 1`;
    expect(create).toMatchObject({
      actor_kind: "runner",
      actor: "ci-runner",
      target: `e2e_run:${run!.id}`,
      details: { suite_id: "smoke" },
    });
    expect(
      await recorded("e2e.results", 202, () =>
        app.fetch(`/e2e/runs/${run!.id}/results`, {
          method: "POST",
          headers: runnerHeaders(),
          body: JSON.stringify({ results: [{ journey_id: run!.journey, status: "passed", duration_ms: 5 }] }),
        }),
      ),
    ).toMatchObject({
      actor_kind: "runner",
      actor: "ci-runner",
      target: `e2e_run:${run!.id}`,
      details: { results: [`${run!.journey}: passed`], count: 1 },
    });
    expect(
      await recorded("e2e.runs_delete", 303, () =>
        app.fetch("/e2e", asAdmin({ action: "delete", ids: run!.id })),
      ),
    ).toMatchObject({ actor: admin.email, details: { ids: run!.id, deleted: 1 } });
  });
});

test("a change refused with a page of its own (400, not thrown) is recorded as refused", async () => {
  const event = await recorded("token.create", 400, () =>
    app.fetch("/settings/tokens", asAdmin({ name: "bad-role", role: "superuser" })),
  );
  expect(event).toMatchObject({ actor: admin.email, details: { name: "bad-role", role: "superuser" } });
});

test("every change done names what it was done to (a target), but the console-wide settings and bulk actions", async () => {
  // Those name no one thing: settings are the console's own; bulk actions list their ids in details.
  const untargeted = await sql<{ action: string }[]>`
    select distinct action from audit_events
    where status < 400 and target is null
      and action not like 'settings.%' and action not in ('device.bulk', 'device.approval', 'alert.bulk', 'e2e.runs_delete')
    order by action`;
  expect(untargeted.map((row) => row.action)).toEqual([]);
});

test("no secret shown once by these changes is anywhere in the audit table", async () => {
  // The admin token, the new API token, the invited operator's password, the script's text.
  expect(shownOnce.length).toBeGreaterThanOrEqual(4);
  const [row] = await sql<
    { text: string }[]
  >`select coalesce(string_agg(audit_events::text, '\n'), '') as text from audit_events`;
  for (const secret of shownOnce) expect(row!.text.includes(secret)).toBe(false);
});
