// The real install.sh, fetched from a running Outpost with curl and run by sh into a throwaway root
// (--prefix: no systemd, no package): it downloads this machine's agent build from /downloads, checks
// its SHA-256, writes the configuration and registers; the device follows the token's policy. A second
// run changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { createEnrolmentToken } from "../../modules/enrolment/service";
import { REPO_ROOT, tempDir } from "../agent/helpers";
import { agentBinary } from "../helpers/agent-binary";
import { startTestApp } from "../helpers/app";
import { runShell } from "./helpers";

const BINARY = path.join(REPO_ROOT, "dist/outpost-agent-linux-x64");
const app = await startTestApp();
const sql = app.database.sql;
const tmp = tempDir("outpost-install-");

beforeAll(() => agentBinary("x64"), 300_000);
afterAll(() => tmp.cleanup());

/** Runs `curl …/install.sh | sh -s -- args`. */
const install = (args: string[]) =>
  runShell('curl -fsSL "$URL/install.sh" | sh -s -- "$@"', args, { URL: app.url, HOME: tmp.dir });

async function devices() {
  return sql<{ id: string; approval_status: string }[]>`select id, approval_status from devices`;
}

describe("install.sh", () => {
  test("--help, and a missing token is a clear error", async () => {
    const help = await install(["--help"]);
    expect(help.code).toBe(0);
    expect(help.out).toContain("usage: install.sh --token <enrolment token>");
    const none = await install([]);
    expect(none.code).not.toBe(0);
    expect(none.err).toContain("--token is required");
  });

  test("installs into a prefix, registers approved; a second run changes nothing", async () => {
    const { token, record } = await createEnrolmentToken(sql, {
      name: "install",
      approve: true,
      createdBy: "test",
    });
    const root = path.join(tmp.dir, "root");
    const first = await install(["--token", token, "--server", app.url, "--prefix", root]);
    expect(first.code).toBe(0);
    expect(first.out).toContain("downloaded outpost-agent-linux-x64 (SHA-256 verified)");
    expect(first.out).toContain("Registered as");
    const bin = path.join(root, "usr/local/bin/outpost-agent");
    expect(fs.statSync(bin).mode & 0o777).toBe(0o755);
    expect(fs.readFileSync(bin).equals(fs.readFileSync(BINARY))).toBe(true);
    const config = fs.readFileSync(path.join(root, "etc/outpost/agent.yaml"), "utf8");
    expect(config).toContain(`server_url: ${app.url}`);
    expect(config).toContain(`enrolment_token: ${token}`);
    expect(fs.statSync(path.join(root, "etc/outpost/agent.yaml")).mode & 0o777).toBe(0o600);
    expect((await devices()).map((d) => d.approval_status)).toEqual(["approved"]);
    expect(fs.existsSync(path.join(root, "var/lib/outpost-agent/identity.json"))).toBe(true);

    const second = await install(["--token", token, "--server", app.url, "--prefix", root]);
    expect(second.code).toBe(0);
    expect(second.out).toContain(`unchanged: ${bin}`);
    expect(second.out).toContain(`unchanged: ${path.join(root, "etc/outpost/agent.yaml")}`);
    expect((await devices()).length).toBe(1);
    expect((await sql`select uses from enrolment_tokens where id = ${record.id}::uuid`)[0]!.uses).toBe(1);
  }, 120_000);

  test("a pending token leaves the device pending; a wrong token says so", async () => {
    await sql`delete from devices`;
    const { token } = await createEnrolmentToken(sql, { name: "pending", approve: false, createdBy: "test" });
    const root = path.join(tmp.dir, "root-pending");
    const run = await install(["--token", token, "--server", app.url, "--prefix", root]);
    expect(run.code).toBe(0);
    expect((await devices()).map((d) => d.approval_status)).toEqual(["pending"]);
    await sql`delete from devices`; // a fresh device: the token decides
    const wrong = await install([
      "--token",
      "oen_wrong",
      "--server",
      app.url,
      "--prefix",
      path.join(tmp.dir, "root-wrong"),
    ]);
    expect(wrong.out + wrong.err).toContain("enrolment token is not valid");
  }, 120_000);

  test("/downloads: the build and its checksum, 404 for what is not built or not served", async () => {
    const sum = await (await app.fetch("/downloads/outpost-agent-linux-x64.sha256")).text();
    expect(sum).toBe(
      `${new Bun.CryptoHasher("sha256").update(fs.readFileSync(BINARY)).digest("hex")}  outpost-agent-linux-x64\n`,
    );
    expect((await app.fetch("/downloads/outpost-agent.service")).status).toBe(200);
    expect((await app.fetch("/downloads/..%2Fpackage.json")).status).toBe(404);
    expect((await app.fetch("/downloads/outpost-agent-linux-mips")).status).toBe(404);
  });
});
