// The agent's Debian package installed, upgraded and purged on this machine with dpkg (as root, as in
// CI): the files, the support user, the service unit (systemd-analyze verify) and the sshd drop-in
// (sshd -t) after install; the device's identity, scripts and edited config kept across an upgrade;
// nothing left after purge. No systemd is needed: the maintainer scripts skip it when it is not running.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { buildDeb } from "../../scripts/agent-deb";
import { agentBinary } from "../helpers/agent-binary";
import { REPO_ROOT, tempDir } from "./helpers.ts";

const BINARY = path.join(REPO_ROOT, "dist", "outpost-agent-linux-x64");
const tmp = tempDir("outpost-deb-");
const canRun = process.getuid?.() === 0 && Bun.which("dpkg") !== null;
const STATE = "/var/lib/outpost-agent";

function sh(args: string[]) {
  const result = Bun.spawnSync(args, {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  return { code: result.exitCode, out: `${result.stdout.toString()}${result.stderr.toString()}`.trim() };
}

function installed(): string | undefined {
  const r = sh(["dpkg-query", "-W", "-f", "${Status} ${Version}", "outpost-agent"]);
  return r.code === 0 && r.out.startsWith("install ok installed") ? r.out.split(" ").pop() : undefined;
}

let first = "";
let second = "";
beforeAll(async () => {
  if (!canRun) return;
  if (installed()) throw new Error("outpost-agent is already installed on this machine: not touching it");
  await agentBinary("x64");
  first = buildDeb({ binary: BINARY, arch: "x64", version: "0.1.0", outDir: tmp.dir });
  second = buildDeb({ binary: BINARY, arch: "x64", version: "0.1.1", outDir: tmp.dir });
}, 180_000);

afterAll(() => {
  if (canRun && installed()) sh(["dpkg", "--purge", "outpost-agent"]);
  tmp.cleanup();
});

describe.skipIf(!canRun)("outpost-agent .deb", () => {
  test("install: binary, unit, config, support user, sshd drop-in", () => {
    const result = sh(["dpkg", "-i", first]);
    expect(result.code).toBe(0);
    expect(result.out).toContain("no systemd here; run it with: outpost-agent poll");
    expect(installed()).toBe("0.1.0");
    expect(sh(["/usr/bin/outpost-agent", "--version"]).out).toMatch(/\(linux-x64\)$/);
    const user = sh(["getent", "passwd", "outpost-support"]).out.split(":");
    expect(user[5]).toBe("/home/outpost-support");
    expect(fs.statSync("/home/outpost-support/.ssh").mode & 0o777).toBe(0o700);
    expect(fs.statSync(STATE).mode & 0o777).toBe(0o700);
    expect(fs.readFileSync("/etc/outpost/agent.yaml", "utf8")).toContain("server_url:");
    const unit = fs.readFileSync("/lib/systemd/system/outpost-agent.service", "utf8");
    expect(unit).toContain("ExecStart=/usr/bin/outpost-agent poll");
    expect(unit).toContain("Restart=always");
    expect(unit).toContain("Environment=BUN_JSC_useDFGJIT=0 BUN_JSC_useFTLJIT=0 BUN_JSC_useOMGJIT=0");
    expect(unit).toContain("Environment=MIMALLOC_PURGE_DELAY=1000");
    if (Bun.which("systemd-analyze")) {
      const verify = sh(["systemd-analyze", "verify", "/lib/systemd/system/outpost-agent.service"]);
      expect({ code: verify.code, out: verify.out }).toEqual({ code: 0, out: "" });
    }
    // sshd accepts the drop-in (checked against a config that includes only it and a host key).
    if (fs.existsSync("/usr/sbin/sshd")) {
      const hostKey = path.join(tmp.dir, "host_ed25519");
      sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey]);
      const config = path.join(tmp.dir, "sshd_config");
      fs.writeFileSync(config, `HostKey ${hostKey}\nInclude /etc/ssh/sshd_config.d/outpost-support.conf\n`);
      const check = sh(["/usr/sbin/sshd", "-t", "-f", config]);
      expect({ code: check.code, out: check.out }).toEqual({ code: 0, out: "" });
    }
  });

  test("upgrade keeps the device's identity, its scripts and the edited config", () => {
    fs.writeFileSync(path.join(STATE, "identity.json"), '{"uuid":"u","token":"t"}', { mode: 0o600 });
    fs.mkdirSync(path.join(STATE, "scripts"), { recursive: true });
    fs.writeFileSync(path.join(STATE, "scripts", "fan.v1.js"), "// script");
    fs.writeFileSync("/etc/outpost/agent.yaml", "server_url: https://outpost.example.test\n");
    const result = sh(["dpkg", "-i", "--force-confold", second]);
    expect(result.code).toBe(0);
    expect(installed()).toBe("0.1.1");
    expect(fs.readFileSync(path.join(STATE, "identity.json"), "utf8")).toBe('{"uuid":"u","token":"t"}');
    expect(fs.existsSync(path.join(STATE, "scripts", "fan.v1.js"))).toBe(true);
    expect(fs.readFileSync("/etc/outpost/agent.yaml", "utf8")).toBe(
      "server_url: https://outpost.example.test\n",
    );
    expect(sh(["getent", "passwd", "outpost-support"]).code).toBe(0);
  });

  test("purge removes the binary, config, drop-in, state and support user", () => {
    const result = sh(["dpkg", "--purge", "outpost-agent"]);
    expect(result.code).toBe(0);
    expect(installed()).toBeUndefined();
    for (const gone of [
      "/usr/bin/outpost-agent",
      "/lib/systemd/system/outpost-agent.service",
      "/etc/outpost/agent.yaml",
      "/etc/ssh/sshd_config.d/outpost-support.conf",
      STATE,
      "/home/outpost-support",
    ]) {
      expect({ path: gone, exists: fs.existsSync(gone) }).toEqual({ path: gone, exists: false });
    }
    expect(sh(["getent", "passwd", "outpost-support"]).code).not.toBe(0);
  });
});
