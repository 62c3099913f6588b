import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { createBuiltins } from "../../agent/builtins/index.ts";
import type { AgentConfig } from "../../agent/config.ts";
import { loadConfig } from "../../agent/config.ts";
import { resolveExecIdentity, spawnIdentity } from "../../agent/exec-identity.ts";
import { runScript } from "../../agent/scripts/runner.ts";
import { parseScript } from "../../shared/scripts/frontmatter.ts";
import { agentBinary } from "../helpers/agent-binary.ts";
import { AGENT_MAIN, BUN, runAgent, scriptText, tempDir, testConfig } from "./helpers.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const home = path.join(tmp.dir, "home");
const isRoot = process.getuid?.() === 0;
const SETPRIV = "/usr/bin/setpriv";

function write(name: string, text: string) {
  const file = path.join(tmp.dir, name);
  fs.writeFileSync(file, text);
  return file;
}

/** `id` of a command run through exec_cmd with the given config overrides, as {uid, gid, groups}. */
async function idVia(overrides: Partial<AgentConfig>) {
  const config = testConfig(tmp.dir, { exec_allowlist: ["/usr/bin/id"], ...overrides });
  const script = parseScript(
    scriptText(
      "ids",
      1,
      `async function main() {
        return { uid: await exec_cmd("/usr/bin/id", ["-u"]), gid: await exec_cmd("/usr/bin/id", ["-g"]),
                 groups: await exec_cmd("/usr/bin/id", ["-G"]), full: await exec_cmd("/usr/bin/id") };
      }`,
    ),
  );
  const { report } = await runScript(script, {
    timeoutMs: 2000,
    warnMs: 1000,
    memoryMb: 32,
    builtins: createBuiltins(config, "ids"),
  });
  return report;
}

describe("exec_cmd runs commands as exec_user/exec_group (real processes, as root)", () => {
  test.skipIf(!isRoot)("exec_user nobody: uid 65534, gid 65534, no supplementary groups", async () => {
    const report = await idVia({ exec_user: "nobody" });
    expect(report.status).toBe("success");
    expect(report.output).toMatchObject({ uid: "65534", gid: "65534", groups: "65534" });
    expect((report.output as { full: string }).full).toStartWith("uid=65534(nobody) gid=65534(");
  });

  test.skipIf(!isRoot)("the default as root is nobody (no exec_user configured)", async () => {
    const report = await idVia({});
    expect(report.output).toMatchObject({ uid: "65534", gid: "65534", groups: "65534" });
  });

  test.skipIf(!isRoot)("exec_user root is explicit opt-in; exec_group by name, numbers as ids", async () => {
    expect((await idVia({ exec_user: "root" })).output).toMatchObject({ uid: "0", gid: "0", groups: "0" });
    expect((await idVia({ exec_user: "nobody", exec_group: "daemon" })).output).toMatchObject({
      uid: "65534",
      gid: "1",
      groups: "1",
    });
    // a uid without a passwd entry needs exec_group; numeric ids are used as they are
    expect((await idVia({ exec_user: "54321", exec_group: "54322" })).output).toMatchObject({
      uid: "54321",
      gid: "54322",
      groups: "54322",
    });
  });

  test.skipIf(!isRoot || !fs.existsSync(SETPRIV))(
    "the agent's own supplementary groups are not passed on (agent started with groups adm, disk, sudo)",
    async () => {
      const file = write(
        "ids.js",
        scriptText("ids", 1, 'async function main() { return { g: await exec_cmd("id", ["-G"]) }; }'),
      );
      const agentWithGroups = [SETPRIV, "--groups", "4,6,27", "--", BUN, AGENT_MAIN];
      const env = {
        HOME: home,
        OUTPOST_AGENT_STATE_DIR: path.join(tmp.dir, "state-g"),
        OUTPOST_AGENT_EXEC_ALLOWLIST: "/usr/bin/id",
      };
      const asNobody = await runAgent(["script", "test", file], env, { executable: agentWithGroups });
      expect(asNobody.stderr).toBe("");
      expect(asNobody.stdout.trim()).toBe('g: "65534"');
      const asRoot = await runAgent(
        ["script", "test", file],
        { ...env, OUTPOST_AGENT_EXEC_USER: "root" },
        {
          executable: agentWithGroups,
        },
      );
      expect(asRoot.stdout.trim()).toBe('g: "0"');
      // sanity: without uid/gid the child would have inherited them
      const inherited = Bun.spawnSync([SETPRIV, "--groups", "4,6,27", "--", "/usr/bin/id", "-G"]);
      expect(inherited.stdout.toString().trim()).toBe("0 4 6 27");
    },
  );

  test.skipIf(!isRoot || !fs.existsSync(SETPRIV))(
    "an agent that is not root refuses another exec_user with a clear error instead of running as itself",
    async () => {
      const dir = path.join(tmp.dir, "nobody-home");
      fs.mkdirSync(dir, { mode: 0o755 });
      fs.chownSync(dir, 65534, 65534);
      fs.chmodSync(tmp.dir, 0o755);
      const file = write(
        "whoami.js",
        scriptText("whoami", 1, 'async function main() { return { u: await exec_cmd("id", ["-u"]) }; }'),
      );
      // The agent as devices run it: the compiled binary, copied where nobody can reach it (the checkout
      // may sit in a private directory, as /root/outpost does).
      const agent = path.join(tmp.dir, "outpost-agent");
      fs.copyFileSync(await agentBinary(process.arch === "arm64" ? "arm64" : "x64"), agent);
      fs.chmodSync(agent, 0o755);
      const asNobody = [SETPRIV, "--reuid", "65534", "--regid", "65534", "--clear-groups", "--", agent];
      const env = {
        HOME: dir,
        OUTPOST_AGENT_STATE_DIR: path.join(dir, "state"),
        OUTPOST_AGENT_EXEC_ALLOWLIST: "/usr/bin/id",
      };
      const asNobodyIn = { executable: asNobody, cwd: dir };
      // nothing configured: runs as the agent's own user
      const own = await runAgent(["script", "test", file], env, asNobodyIn);
      expect(own.stdout.trim()).toBe('u: "65534"');
      // configured as itself: fine
      const self = await runAgent(
        ["script", "test", file],
        { ...env, OUTPOST_AGENT_EXEC_USER: "nobody" },
        asNobodyIn,
      );
      expect(self.stdout.trim()).toBe('u: "65534"');
      const other = await runAgent(
        ["script", "test", file],
        { ...env, OUTPOST_AGENT_EXEC_USER: "root" },
        asNobodyIn,
      );
      expect(other.code).toBe(1);
      expect(other.stdout + other.stderr).toContain(
        "exec_cmd: cannot run commands as root (uid 0, gid 0 root): the agent runs as uid 65534 (gid 65534), not root, and cannot switch users",
      );
    },
  );
});

describe("exec_user / exec_group resolution", () => {
  const passwd = write("passwd", "root:x:0:0:root:/root:/bin/sh\n# comment\nsvc:x:1200:1300::/:/bin/false\n");
  const group = write("group", "root:x:0:\nsvcgrp:x:1300:\nwheel:x:10:svc\n");
  const files = { passwdFile: passwd, groupFile: group };
  const root = { uid: 0, gid: 0 };

  test("names come from passwd/group; the primary group is the default; numbers are ids", () => {
    expect(resolveExecIdentity("svc", null, root, files)).toEqual({
      uid: 1200,
      gid: 1300,
      user: "svc",
      group: "svcgrp",
    });
    expect(resolveExecIdentity("svc", "wheel", root, files)).toEqual({
      uid: 1200,
      gid: 10,
      user: "svc",
      group: "wheel",
    });
    expect(resolveExecIdentity("1200", "77", root, files)).toEqual({
      uid: 1200,
      gid: 77,
      user: "svc",
      group: "77",
    });
    expect(() => resolveExecIdentity("4242", null, root, files)).toThrow(
      `exec_user: uid 4242 has no entry in ${passwd}, so it has no primary group: set exec_group too`,
    );
  });

  test("default: nobody as root (65534 when the system has none), no switch when not root", () => {
    expect(resolveExecIdentity(null, null, root, files)).toEqual({
      uid: 65534,
      gid: 65534,
      user: "nobody",
      group: "65534",
    });
    expect(resolveExecIdentity(null, null, root)).toMatchObject({ uid: 65534, gid: 65534, user: "nobody" });
    expect(resolveExecIdentity(null, null, { uid: 1200, gid: 1300 }, files)).toBeNull();
  });

  test("spawn options: always ids as root; not root only its own identity, else a clear refusal", () => {
    const svc = resolveExecIdentity("svc", null, root, files);
    expect(spawnIdentity(svc, root)).toEqual({ uid: 1200, gid: 1300 });
    expect(spawnIdentity(null, { uid: 1200, gid: 1300 })).toBeNull();
    expect(spawnIdentity(svc, { uid: 1200, gid: 1300 })).toBeNull();
    expect(() => spawnIdentity(svc, { uid: 1000, gid: 1000 })).toThrow(
      "cannot run commands as svc (uid 1200, gid 1300 svcgrp): the agent runs as uid 1000 (gid 1000), not root, and cannot switch users",
    );
    // same user, other group: refused too
    expect(() =>
      spawnIdentity(resolveExecIdentity(null, "wheel", { uid: 1200, gid: 1300 }, files), {
        uid: 1200,
        gid: 1300,
      }),
    ).toThrow(/cannot switch users/);
  });
});

describe("exec_user / exec_group configuration", () => {
  test("defaults are unset; YAML accepts names and numbers; the environment overrides the file", () => {
    const base = loadConfig({ env: { HOME: home } }).config;
    expect(base.exec_user).toBeNull();
    expect(base.exec_group).toBeNull();
    const file = write("exec.yaml", "exec_user: 65534\nexec_group: nogroup\n");
    const fromFile = loadConfig({ file, env: { HOME: home } }).config;
    expect(fromFile.exec_user).toBe("65534");
    expect(fromFile.exec_group).toBe("nogroup");
    const fromEnv = loadConfig({
      file,
      env: { HOME: home, OUTPOST_AGENT_EXEC_USER: "nobody", OUTPOST_AGENT_EXEC_GROUP: "65534" },
    }).config;
    expect(fromEnv.exec_user).toBe("nobody");
    expect(fromEnv.exec_group).toBe("65534");
    // an empty variable resets to the default
    expect(
      loadConfig({ file, env: { HOME: home, OUTPOST_AGENT_EXEC_USER: "" } }).config.exec_user,
    ).toBeNull();
  });

  test.skipIf(!isRoot)("an OUTPOST_AGENT_EXEC_USER override takes effect in exec_cmd", async () => {
    const { config } = loadConfig({
      env: { HOME: home, OUTPOST_AGENT_EXEC_USER: "root", OUTPOST_AGENT_EXEC_GROUP: "daemon" },
    });
    const report = await idVia({ exec_user: config.exec_user, exec_group: config.exec_group });
    expect(report.output).toMatchObject({ uid: "0", gid: "1", groups: "1" });
  });

  const bad: [string, Record<string, string>, string][] = [
    [
      "unknown user",
      { OUTPOST_AGENT_EXEC_USER: "no-such-user" },
      'invalid configuration: exec_user: unknown user "no-such-user" (not in /etc/passwd and not a numeric uid)',
    ],
    [
      "unknown group",
      { OUTPOST_AGENT_EXEC_USER: "nobody", OUTPOST_AGENT_EXEC_GROUP: "no-such-group" },
      'invalid configuration: exec_group: unknown group "no-such-group" (not in /etc/group and not a numeric gid)',
    ],
    [
      "malformed user",
      { OUTPOST_AGENT_EXEC_USER: "Bad User" },
      "exec_user: must be a user name or a numeric uid",
    ],
    [
      "malformed group",
      { OUTPOST_AGENT_EXEC_GROUP: "a:b" },
      "exec_group: must be a group name or a numeric gid",
    ],
    [
      "uid without passwd entry or group",
      { OUTPOST_AGENT_EXEC_USER: "54321" },
      "invalid configuration: exec_user: uid 54321 has no entry in /etc/passwd, so it has no primary group: set exec_group too",
    ],
  ];
  for (const [label, env, message] of bad) {
    test(`rejects ${label} with one clear line`, () => {
      expect(() => loadConfig({ env: { HOME: home, ...env } })).toThrow(message);
    });
  }

  test("an unknown exec_user stops the CLI with exit code 2", async () => {
    const r = await runAgent(["script", "list"], {
      HOME: home,
      OUTPOST_AGENT_STATE_DIR: path.join(tmp.dir, "state-cli"),
      OUTPOST_AGENT_EXEC_USER: "no-such-user",
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('exec_user: unknown user "no-such-user"');
  });
});
