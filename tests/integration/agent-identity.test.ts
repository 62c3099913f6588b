// An agent upgraded from a version without device secrets (identity.json holds uuid and token, no
// secret) against the real server: its first poll binds a secret by proving its token, with no
// operator action; afterwards the MAC address alone no longer gets a token.
import { afterAll, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { detectIdentity } from "../../agent/identity";
import { createEnrolmentToken } from "../../modules/enrolment/service";
import { sha256Hex } from "../../modules/platform/crypto";
import { AGENT_MAIN, BUN, tempDir } from "../agent/helpers";
import { json } from "../devices/helpers";
import { startTestApp } from "../helpers/app";

const app = await startTestApp();
const work = tempDir("outpost-agent-identity-");
afterAll(() => work.cleanup());
const stateDir = path.join(work.dir, "state");
const configFile = path.join(work.dir, "agent.yaml");
fs.writeFileSync(
  configFile,
  YAML.stringify({
    server_url: app.url,
    product_name: "legacy",
    state_dir: stateDir,
    authorized_keys_path: path.join(work.dir, "ssh", "authorized_keys"),
    log_level: "info",
  }),
);

test("the first poll after the upgrade binds the device secret; the MAC alone is refused from then on", async () => {
  // The device as an old agent left it: registered, approved, holding a token, no secret anywhere.
  const mac = detectIdentity(null).mac_address;
  const register = (body: Record<string, unknown>) =>
    app.fetch("/api/v1/devices/register", json({ mac_address: mac, ...body }));
  // (Enrolled at once by an approving enrolment token: the one way a device without a secret gets a token.)
  const { token: enrolment } = await createEnrolmentToken(app.database.sql, {
    name: "legacy",
    approve: true,
    createdBy: "test",
  });
  const legacy = (await (await register({ enrolment_token: enrolment })).json()) as {
    data: { id: string; api_token: string };
  };
  fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  fs.writeFileSync(
    path.join(stateDir, "identity.json"),
    JSON.stringify({ uuid: legacy.data.id, token: legacy.data.api_token }),
    { mode: 0o600 },
  );

  const child = Bun.spawn([BUN, AGENT_MAIN, "poll", "--once"], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: work.dir, OUTPOST_AGENT_CONFIG: configFile },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
  expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
  expect(stderr).toContain("device secret bound to this device's identity");

  const secret = JSON.parse(fs.readFileSync(path.join(stateDir, "device-secret.json"), "utf8"));
  expect(secret.bound).toBe(true);
  const [row] = await app.database.sql<{ secret_hash: string; events: number }[]>`
    select secret_hash, (select count(*)::int from telemetry_events where device_id = d.id) as events
    from devices d where id = ${legacy.data.id}::uuid`;
  expect(row!.secret_hash).toBe(sha256Hex(secret.secret));
  expect(row!.events).toBe(1); // the poll went on with the new token
  const stored = JSON.parse(fs.readFileSync(path.join(stateDir, "identity.json"), "utf8"));
  expect(stored.token).not.toBe(legacy.data.api_token);

  const stranger = await register({ product_name: "evil" });
  expect(stranger.status).toBe(409);
  expect(((await stranger.json()) as { error: { code: string } }).error.code).toBe("identity_conflict");
}, 60_000);
