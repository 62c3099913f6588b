// Backups proven by a restore, with real processes: `./outpost start` on the embedded PostgreSQL in a
// DATA_DIR, the real agent with a real sshd behind the tunnel, an alert rule, a report, an enrolment
// token and a recorded terminal session → `./outpost backup` while the agent's heartbeats arrive →
// stop, wipe DATA_DIR → `./outpost restore` → start again: the agent goes on with its token and the
// tunnel, the operator signs in, the recording plays, the audit log is intact. Then the same archive
// moves the fleet to an external PostgreSQL (`DATABASE_URL`).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createRule } from "../../modules/alerts/rules";
import { createEnrolmentToken } from "../../modules/enrolment/service";
import { createApiToken, createOperator } from "../../modules/operators/service";
import { consoleCookieName, csrfTokenFor, SESSION_COOKIE } from "../../modules/platform/access";
import { sha256Hex } from "../../modules/platform/crypto";
import { connectDatabase, type Database } from "../../modules/platform/database";
import { startEmbeddedPostgres } from "../../modules/platform/embedded-postgres";
import { loadHostKey } from "../../modules/platform/host-key";
import { freePort } from "../agent/helpers";
import { approvedDevice } from "../devices/helpers";
import type { TestApp } from "../helpers/app";
import {
  killEmbeddedPostgres,
  type OutpostProcess,
  runOutpost,
  startOutpostProcess,
} from "../helpers/process";
import { operatorSession } from "../helpers/sessions";
import { seedTwoProducts } from "../reports/fixtures";
import { openSocket, startDevice, startTerminal, type TestDevice, waitFor } from "../terminal/helpers";
import { emptyDatabase } from "./helpers";

const root = mkdtempSync(path.join(tmpdir(), "outpost-backup-"));
const dataDir = path.join(root, "data");
const archive = path.join(root, "fleet.tar.gz");
const PASSWORD = "correct horse battery";
const ADMIN = "keeper@backup.test";
const [port, sshPort, httpPort, muxPort, dataPort] = await Promise.all(
  Array.from({ length: 5 }, () => freePort()),
);
const env: Record<string, string> = {
  DATA_DIR: dataDir,
  PORT: String(port),
  BASE_DOMAIN: "backup.test",
  TUNNEL_SSH_PORT: String(sshPort),
  TUNNEL_HTTP_PORT: String(httpPort),
  TUNNEL_MUX_PORT: String(muxPort),
  TUNNEL_DATA_PORT: String(dataPort),
};
const url = `http://127.0.0.1:${port}`;
/** What the helpers of tests/terminal and tests/devices need of an app: its URL and a fetch. */
const web = {
  url,
  fetch: (pathname: string, init?: RequestInit) =>
    fetch(`${url}${pathname}`, { redirect: "manual", ...init }),
};

let server: OutpostProcess | undefined;
let device: TestDevice | undefined;
const opened: Database[] = [];
afterAll(async () => {
  await device?.stop();
  if (server && server.process.exitCode === null) await server.interrupt();
  for (const database of opened) await database.close();
  killEmbeddedPostgres(path.join(dataDir, "postgres"));
  rmSync(root, { recursive: true, force: true });
});

/** The running server's embedded PostgreSQL (shared, as the CLI shares it). */
async function embeddedDatabase(): Promise<Database> {
  const postgres = await startEmbeddedPostgres({
    directory: path.join(dataDir, "postgres"),
    adoptOrphan: false,
  });
  const database = connectDatabase(postgres.url, 2);
  opened.push(database);
  return database;
}

async function signIn(base: typeof web, email: string) {
  const page = await base.fetch("/login");
  const csrfCookie = page.headers.get("set-cookie")!.split(";")[0]!;
  const csrf = (await page.text()).match(/name="_csrf" value="([^"]+)"/)![1]!;
  const response = await base.fetch("/login", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: csrfCookie },
    body: new URLSearchParams({ email, password: PASSWORD, _csrf: csrf, next: "/devices" }),
  });
  expect(response.status).toBe(303);
  const session = response.headers
    .getSetCookie()
    .find((c) => c.startsWith(`${consoleCookieName(SESSION_COOKIE, false)}=`))!;
  const token = session.split(";")[0]!.split("=")[1]!;
  return { cookie: session.split(";")[0]!, token };
}

/** A terminal through the tunnel: the operator types `echo <marker>`, then `exit`; returns the session id. */
async function recordTerminal(operator: { cookie: string; csrf: string }, marker: string): Promise<string> {
  const started = await startTerminal(web, device!.id, operator);
  expect(started.status).toBe(201);
  const socket = openSocket(web, started.data.socket_token, operator.cookie);
  await socket.opened;
  socket.send({
    event: "join",
    topic: started.data.topic,
    payload: {
      session_ref: started.data.session_ref,
      command_id: started.data.command_id,
      columns: 100,
      rows: 30,
    },
  });
  await waitFor(() => socket.frame("joined") ?? socket.frame("join_error"), 60_000, "the join");
  expect(socket.frame("join_error")).toBeUndefined();
  socket.send({ event: "input", payload: { data: `echo ${marker}\r` } });
  await waitFor(() => socket.output().includes(`${marker}\r\n`), 15_000, "the echo");
  socket.send({ event: "input", payload: { data: "exit\r" } });
  await waitFor(() => socket.frame("ended"), 15_000, "the end");
  return started.data.session_id;
}

interface Snapshot {
  audit: { id: string; action: string; actor: string; target: string | null; status: number }[];
  operators: string[];
  rules: string[];
  reports: string[];
  enrolment: string[];
  device: { api_token_hash: string; approval_status: string };
}

async function snapshot(database: Database, deviceId: string): Promise<Snapshot> {
  const { sql } = database;
  const [row] = await sql<Snapshot["device"][]>`
    select api_token_hash, approval_status::text from devices where id = ${deviceId}::uuid`;
  return {
    audit: await sql`select id::text, action, actor, target, status from audit_events order by at, id`,
    operators: (await sql<{ email: string }[]>`select email from operators order by email`).map(
      (r) => r.email,
    ),
    rules: (await sql<{ name: string }[]>`select name from alert_rules order by name`).map((r) => r.name),
    reports: (await sql<{ name: string }[]>`select name from custom_reports order by name`).map(
      (r) => r.name,
    ),
    enrolment: (await sql<{ name: string }[]>`select name from enrolment_tokens order by name`).map(
      (r) => r.name,
    ),
    device: row!,
  };
}

let before: Snapshot;
/** The audit events of `after` that the backup saw (events written since may follow them). */
const keptAudit = (after: Snapshot) => after.audit.filter((e) => before.audit.some((b) => b.id === e.id));
let recordedSession = "";
const marker = `kept-${crypto.randomUUID().slice(0, 8)}`;
const originalKeys = { secret: "", hostKey: "" };

describe("backup and restore of a running Outpost", () => {
  test("a fleet with an agent, a rule, a report, an enrolment token and a terminal recording is backed up while heartbeats arrive", async () => {
    server = await startOutpostProcess(env, 90_000, false);
    const database = await embeddedDatabase();
    originalKeys.secret = readFileSync(path.join(dataDir, "secret_key"), "utf8").trim();
    originalKeys.hostKey = readFileSync(path.join(dataDir, "tunnel_host_key"), "utf8");
    await createOperator(database.db, { email: ADMIN, password: PASSWORD, role: "admin" });
    const admin = (await createApiToken(database.db, { name: "backup-admin", role: "admin" })).token;
    const app = { ...web, database, config: { dataDir: root } } as unknown as TestApp;
    const approved = await approvedDevice(app, { product_name: "backup-box" });
    device = await startDevice({ url, tunnelSshPort: sshPort, device: approved }, { pollSeconds: 2 });
    await waitFor(
      async () =>
        (await database.sql`select 1 from telemetry_events where device_id = ${approved.id}::uuid`).length >
        0,
      30_000,
      "the agent's first heartbeat",
    );
    // Devices of two products with their schemas and telemetry (the agent here runs no scripts):
    // the fields the rule and the report pick.
    await seedTwoProducts(app);
    await createRule(database.sql, {
      name: "Atom busy",
      product_name: "atom",
      condition_field: "cpu.usage_pct",
      operator: ">",
      threshold_value: "50",
    });
    const report = await web.fetch("/api/v1/reports", {
      method: "POST",
      headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
      body: JSON.stringify({
        name: "Fleet CPU",
        config: {
          schema_id: null,
          fields: [{ path: "cpu.usage_pct", alias: "cpu" }],
          range: { preset: "24h" },
        },
      }),
    });
    expect({ status: report.status, body: report.status === 201 ? "" : await report.text() }).toEqual({
      status: 201,
      body: "",
    });
    await createEnrolmentToken(database.sql, { name: "line 7", approve: true, createdBy: ADMIN });
    const operator = await operatorSession(database.db, originalKeys.secret, "operator");
    recordedSession = await recordTerminal(operator, marker);
    await waitFor(
      async () => (await database.sql`select 1 from audit_events where action = 'terminal.end'`).length > 0,
      15_000,
      "the terminal's end in the audit log",
    );
    before = await snapshot(database, approved.id);

    const seenBefore = await database.sql<{ n: number }[]>`select count(*)::int as n from telemetry_events`;
    const backup = await runOutpost(["backup", "--output", archive], env);
    expect({ code: backup.code, stderr: backup.code === 0 ? "" : backup.stderr }).toEqual({
      code: 0,
      stderr: "",
    });
    expect(backup.stdout).toBe(`${archive}\n`);
    // Not on a terminal: the summary alone, no progress line.
    expect(backup.stderr).toMatch(
      /^Backup written in [\d.]+ s: \d+ tables, \d+ rows \(\d+ devices\), migration \d+\.\n$/,
    );
    expect(statSync(archive).mode & 0o777).toBe(0o600);
    // Heartbeats kept arriving: the agent polls every 2 s.
    await waitFor(
      async () =>
        (await database.sql<{ n: number }[]>`select count(*)::int as n from telemetry_events`)[0]!.n >
        seenBefore[0]!.n,
      20_000,
      "a heartbeat after the backup began",
    );
  }, 240_000);

  test("stop, wipe DATA_DIR, restore, start: the agent, the tunnel, sign-in, the recording and the audit log are back", async () => {
    // Never over a running server, even when told to replace the target.
    const refused = await runOutpost(["restore", "--force", archive], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /^outpost: Outpost is running on \S+ \(PostgreSQL pid \d+\): stop it before restoring\n$/,
    );
    expect(await server!.interrupt()).toBe(0);
    rmSync(dataDir, { recursive: true, force: true });
    const restored = await runOutpost(["restore", archive], { DATA_DIR: dataDir });
    expect({ code: restored.code, stderr: restored.code === 0 ? "" : restored.stderr }).toEqual({
      code: 0,
      stderr: expect.any(String),
    });
    expect(restored.stderr).toMatch(/^Restored in [\d.]+ s: \d+ tables/);
    expect(readFileSync(path.join(dataDir, "secret_key"), "utf8").trim()).toBe(originalKeys.secret);
    expect(loadHostKey(dataDir, "").fingerprint).toBe(loadHostKey(dataDir, originalKeys.hostKey).fingerprint);
    expect(statSync(path.join(dataDir, "tunnel_host_key")).mode & 0o777).toBe(0o600);

    const restartedAt = new Date();
    server = await startOutpostProcess(env, 90_000, false);
    const database = await embeddedDatabase();
    const after = await snapshot(database, device!.id);
    // Everything the backup saw is there, the audit log event for event (later events may follow).
    expect(keptAudit(after)).toEqual(before.audit);
    expect({ ...after, audit: [] }).toEqual({ ...before, audit: [] });

    // The agent goes on with its token: heartbeats are accepted again after the restart.
    await waitFor(
      async () =>
        (
          await database.sql`select 1 from devices where id = ${device!.id}::uuid
            and last_seen_at > ${restartedAt.toISOString()}::timestamptz`
        ).length > 0,
      60_000,
      "a heartbeat of the agent after the restore",
    );
    // The operator signs in with the password they had; the recording plays.
    const signedIn = await signIn(web, ADMIN);
    const devices = await web.fetch("/devices", { headers: { cookie: signedIn.cookie } });
    expect(devices.status).toBe(200);
    const cast = await web.fetch(`/terminal/sessions/${recordedSession}/recording.cast`, {
      headers: { cookie: signedIn.cookie },
    });
    expect(cast.status).toBe(200);
    expect(await cast.text()).toContain(marker);
    // Remote access opens through the tunnel, whose host key the agent pins: a new terminal works.
    const second = `again-${crypto.randomUUID().slice(0, 8)}`;
    const csrf = csrfTokenFor(originalKeys.secret, sha256Hex(signedIn.token));
    const sessionId = await recordTerminal({ cookie: signedIn.cookie, csrf }, second);
    expect(sessionId).not.toBe(recordedSession);
  }, 240_000);

  test("moving to an external PostgreSQL: the same archive restored with DATABASE_URL, then started on it", async () => {
    const external = await emptyDatabase();
    const movedDir = path.join(root, "moved");
    const restored = await runOutpost(["restore", archive], {
      DATA_DIR: movedDir,
      DATABASE_URL: external.url,
    });
    expect({ code: restored.code, stderr: restored.code === 0 ? "" : restored.stderr }).toEqual({
      code: 0,
      stderr: expect.any(String),
    });
    const movedPort = await freePort();
    const moved = await startOutpostProcess(
      {
        DATA_DIR: movedDir,
        DATABASE_URL: external.url,
        PORT: String(movedPort),
        TUNNEL_SSH_PORT: "0",
        TUNNEL_HTTP_PORT: "0",
        TUNNEL_MUX_PORT: "0",
        TUNNEL_DATA_PORT: "0",
      },
      90_000,
      false,
    );
    try {
      const movedWeb = {
        url: `http://127.0.0.1:${movedPort}`,
        fetch: (pathname: string, init?: RequestInit) =>
          fetch(`http://127.0.0.1:${movedPort}${pathname}`, { redirect: "manual", ...init }),
      };
      const signedIn = await signIn(movedWeb, ADMIN);
      expect((await movedWeb.fetch("/devices", { headers: { cookie: signedIn.cookie } })).status).toBe(200);
      const database = connectDatabase(external.url, 2);
      opened.push(database);
      const after = await snapshot(database, device!.id);
      expect(keptAudit(after)).toEqual(before.audit);
      expect({ ...after, audit: [] }).toEqual({ ...before, audit: [] });
      // The real agent, pointed at the new server, is accepted with the token it has.
      const poll = Bun.spawn(
        [
          path.resolve(import.meta.dir, "../../node_modules/.bin/bun"),
          path.resolve(import.meta.dir, "../../agent/main.ts"),
          "poll",
          "--once",
        ],
        {
          env: {
            PATH: process.env.PATH ?? "/usr/bin:/bin",
            HOME: device!.dir,
            OUTPOST_AGENT_SERVER_URL: movedWeb.url,
            OUTPOST_AGENT_STATE_DIR: path.join(device!.dir, "state"),
            OUTPOST_AGENT_INSTALL_BUILTIN_SCRIPTS: "false",
            OUTPOST_AGENT_AUTHORIZED_KEYS_PATH: device!.authorizedKeys,
          },
          stdout: "pipe",
          stderr: "pipe",
        },
      );
      const [stderr, code] = await Promise.all([new Response(poll.stderr).text(), poll.exited]);
      expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
      const [seen] = await database.sql<{ n: number }[]>`
        select count(*)::int as n from devices where id = ${device!.id}::uuid and last_seen_at > now() - interval '1 minute'`;
      expect(seen!.n).toBe(1);
    } finally {
      await moved.interrupt();
    }
  }, 240_000);
});
