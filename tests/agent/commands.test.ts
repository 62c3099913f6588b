import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import pino from "pino";
import { utils } from "ssh2";
import { ApiError, parseCommandPayloadReply } from "../../agent/api-client.ts";
import { executeCommands, hydrateCommandPayloads } from "../../agent/commands/executor.ts";
import { formatExpiry, parsePublicKey } from "../../agent/commands/ssh.ts";
import type { CommandContext, ServerCommand } from "../../agent/commands/types.ts";
import { ScriptStore } from "../../agent/scripts/store.ts";
import { logger, scriptText, tempDir, testConfig } from "./helpers.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());

function context(name: string, overrides = {}): CommandContext {
  const config = testConfig(path.join(tmp.dir, name), { command_timeout_ms: 300, ...overrides });
  fs.mkdirSync(path.join(tmp.dir, name), { recursive: true });
  return { config, store: new ScriptStore(config.scripts_dir), logger };
}

const v = (version: number, body = "function main() { return { v: 1 }; }") =>
  scriptText("probe", version, body);
const edKey = () => utils.generateKeyPairSync("ed25519", { comment: "test" }).public;

describe("command batch rules", () => {
  test("missing id, duplicate id, unsupported type and pre-failed payloads yield FAILED results in order", async () => {
    const ctx = context("batch");
    const cmds: ServerCommand[] = [
      { type: "list_scripts" },
      { command_id: "c1", type: "list_scripts", args: [] },
      { command_id: "c1", type: "list_scripts" },
      { command_id: "c2", type: "reboot" },
      { command_id: "c3", type: "install_script", payload_ref: "r1" },
      { command_id: "", type: "list_scripts" },
    ];
    const pre = new Map([[cmds[4], "payload_fetch_failed: 404"]]);
    const results = await executeCommands(cmds, ctx, pre);
    expect(results).toEqual([
      { command_id: "", status: "FAILED", error: "missing_command_id" },
      { command_id: "c1", status: "OK", output: { scripts: [] } },
      { command_id: "c1", status: "FAILED", error: "duplicate_command_id" },
      { command_id: "c2", status: "FAILED", error: "unsupported command: reboot" },
      { command_id: "c3", status: "FAILED", error: "payload_fetch_failed: 404" },
      { command_id: "", status: "FAILED", error: "missing_command_id" },
    ]);
  });

  test("a command exceeding its timeout is FAILED timeout", async () => {
    const ctx = context("timeout");
    const slow = {
      slow: async () => new Promise<Record<string, unknown>>((r) => setTimeout(() => r({}), 2000)),
    };
    const started = Date.now();
    const results = await executeCommands([{ command_id: "s1", type: "slow" }], ctx, new Map(), slow);
    expect(results).toEqual([{ command_id: "s1", status: "FAILED", error: "timeout" }]);
    expect(Date.now() - started).toBeLessThan(1500);
  });

  test("a real handler that blocks past the timeout is FAILED timeout, flagged timed_out_after_commit", async () => {
    // ssh_authorize reads authorized_keys synchronously; a FIFO there blocks it (and the whole event loop,
    // so no timer can fire) until another process opens and closes the FIFO ~1 s later.
    const ctx = context("slow-real"); // command_timeout_ms: 300
    const file = ctx.config.authorized_keys_path;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    expect(Bun.spawnSync(["mkfifo", file]).exitCode).toBe(0);
    const writer = Bun.spawn(["sh", "-c", 'sleep 1; : > "$0"', file]);
    const started = performance.now();
    const [r] = await executeCommands(
      [{ command_id: "late", type: "ssh_authorize", args: { public_key: edKey(), session_ref: "late-1" } }],
      ctx,
    );
    await writer.exited;
    expect(performance.now() - started).toBeGreaterThan(300);
    expect(r).toMatchObject({
      command_id: "late",
      status: "FAILED",
      error: "timeout",
      output: { mode: "dynamic_ssh_authorize", session_ref: "late-1", timed_out_after_commit: true },
    });
    // the work was done (committed) even though the command is reported as timed out
    expect(fs.statSync(file).isFile()).toBe(true);
    expect(fs.readFileSync(file, "utf8")).toContain("outpost-session:late-1");

    // the same command within its time is OK, without the flag
    const [ok] = await executeCommands(
      [{ command_id: "fast", type: "ssh_authorize", args: { public_key: edKey(), session_ref: "late-1" } }],
      ctx,
    );
    expect(ok.status).toBe("OK");
    expect(ok.output?.timed_out_after_commit).toBeUndefined();
  });

  test("the elapsed-time check uses the context clock: install_script past its deadline is FAILED", async () => {
    const ctx = context("slow-clock");
    let t = 0;
    ctx.now = () => {
      t += 200; // each reading 200 ms later: start → end = 200 ms > the 150 ms timeout
      return t;
    };
    ctx.config.command_timeout_ms = 150;
    const [r] = await executeCommands([{ command_id: "i", type: "install_script", payload: v(3) }], ctx);
    expect(r).toMatchObject({
      status: "FAILED",
      error: "timeout",
      output: { name: "probe", version: 3, timed_out_after_commit: true },
    });
    expect(ctx.store.find("probe")?.meta.version).toBe(3);
  });

  test("a failed command is logged at warn, a successful one at info", async () => {
    const lines: { level: number; msg: string; command_id: string }[] = [];
    const capture = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const ctx = { ...context("log-levels"), logger: capture };
    await executeCommands(
      [
        { command_id: "bad", type: "install_script", payload: "no front matter here" },
        { command_id: "good", type: "list_scripts" },
      ],
      ctx,
    );
    expect(lines.map(({ level, msg, command_id }) => ({ level, msg, command_id }))).toEqual([
      { level: 40, msg: "command failed", command_id: "bad" },
      { level: 30, msg: "command executed", command_id: "good" },
    ]);
  });

  test("prototype keys are not command types", async () => {
    const results = await executeCommands([{ command_id: "p", type: "constructor" }], context("proto"));
    expect(results[0]).toEqual({
      command_id: "p",
      status: "FAILED",
      error: "unsupported command: constructor",
    });
  });

  test("deferred payloads: fetched, invalid refs and fetch failures reported", async () => {
    const api = {
      fetchCommandPayload: async (_id: string, _t: string, ref: string) => {
        if (ref === "good") return "SCRIPT";
        if (ref === "slow") return new Promise((r) => setTimeout(() => r("late"), 2000));
        throw new ApiError("GET … answered 404 payload_not_found", 404, "payload_not_found");
      },
    };
    const cmds: ServerCommand[] = [
      { command_id: "a", type: "install_script", payload_ref: "good" },
      { command_id: "b", type: "install_script", payload_ref: "../etc" },
      { command_id: "c", type: "install_script", payload_ref: "missing" },
      { command_id: "d", type: "install_script", payload_ref: "slow" },
      { command_id: "e", type: "install_script", payload: "inline", payload_ref: "ignored" },
    ];
    const { commands, failures } = await hydrateCommandPayloads(cmds, api, "dev", "tok", 300);
    expect(commands[0].payload).toBe("SCRIPT");
    expect(commands[4].payload).toBe("inline");
    expect(failures.get(commands[1])).toBe('invalid_payload_ref: "../etc"');
    expect(failures.get(commands[2])).toMatch(/^payload_fetch_failed: .*404 payload_not_found/);
    expect(failures.get(commands[3])).toMatch(/^payload_fetch_failed: timed out after 300 ms/);
  });
});

describe("command payload replies", () => {
  test("parseCommandPayloadReply accepts the bare payload and the {data:{payload}} envelope", () => {
    const bare = { content_type: "text/javascript", name: "x", data: "SCRIPT" };
    expect(parseCommandPayloadReply(bare)).toEqual(bare);
    expect(parseCommandPayloadReply({ data: { payload: "SCRIPT" } })).toBe("SCRIPT");
    expect(parseCommandPayloadReply("SCRIPT")).toBe("SCRIPT");
    expect(() => parseCommandPayloadReply(null)).toThrow(/empty or not an object/);
  });
});

describe("script commands", () => {
  test("install requires a higher version unless forced; list and remove", async () => {
    const ctx = context("scripts");
    const run = (c: ServerCommand) => executeCommands([c], ctx).then((r) => r[0]);
    expect(await run({ command_id: "1", type: "install_script", payload: v(2) })).toMatchObject({
      status: "OK",
      output: { name: "probe", version: 2 },
    });
    expect(await run({ command_id: "2", type: "install_script", payload: { data: v(2) } })).toEqual({
      command_id: "2",
      status: "FAILED",
      error: "version must be greater than v2 (installed); use force to overwrite",
    });
    expect((await run({ command_id: "3", type: "install_script", payload: v(1) })).status).toBe("FAILED");
    expect((await run({ command_id: "4", type: "install_script", payload: { data: v(3) } })).status).toBe(
      "OK",
    );
    const forced = await run({
      command_id: "5",
      type: "install_script",
      payload: { data: v(1), force: true },
    });
    expect(forced).toMatchObject({ status: "OK", output: { version: 1 } });
    expect(ctx.store.list().map((s) => s.meta.version)).toEqual([1]);
    expect(
      (await run({ command_id: "5b", type: "install_script", payload: v(1), args: { force: true } })).status,
    ).toBe("OK");
    expect(await run({ command_id: "6", type: "install_script", payload: "not a script" })).toMatchObject({
      status: "FAILED",
      error: expect.stringContaining("front-matter"),
    });
    expect(await run({ command_id: "7", type: "install_script" })).toMatchObject({
      status: "FAILED",
      error: "missing script content",
    });
    const listed = await run({ command_id: "8", type: "list_scripts" });
    expect(listed.output).toEqual({
      scripts: [
        { name: "probe", version: 1, path: path.join(ctx.config.scripts_dir, "probe@v1.js"), active: true },
      ],
    });
    expect(await run({ command_id: "9", type: "remove_script", args: ["probe"] })).toEqual({
      command_id: "9",
      status: "OK",
      output: {
        name: "probe",
        version: 1,
        removed: [{ version: 1, path: path.join(ctx.config.scripts_dir, "probe@v1.js") }],
      },
    });
    expect(await run({ command_id: "10", type: "remove_script", args: { name: "probe" } })).toEqual({
      command_id: "10",
      status: "FAILED",
      error: "script not found: probe",
    });
    expect(await run({ command_id: "11", type: "remove_script" })).toMatchObject({
      status: "FAILED",
      error: "missing name",
    });
  });

  test("latest version of each script is the one that runs; remove with a version keeps the others", () => {
    const ctx = context("versions");
    ctx.store.install(v(1));
    ctx.store.install(v(4));
    ctx.store.install(scriptText("other", 2, "function main() { return {}; }"));
    expect(ctx.store.latest().map((s) => `${s.meta.name}@${s.meta.version}`)).toEqual(["other@2", "probe@4"]);
    ctx.store.remove("probe", 4);
    expect(ctx.store.latest().map((s) => `${s.meta.name}@${s.meta.version}`)).toEqual(["other@2", "probe@1"]);
  });
});

test("remove_script reports the version removed: the one asked for, else the highest", async () => {
  const ctx = context("remove-version");
  for (const n of [1, 4, 6]) ctx.store.install(v(n), { force: n === 1 });
  const run = (c: ServerCommand) => executeCommands([c], ctx).then((r) => r[0]);
  expect(await run({ command_id: "r4", type: "remove_script", args: ["probe", "v4"] })).toMatchObject({
    status: "OK",
    output: { name: "probe", version: 4, removed: [{ version: 4 }] },
  });
  expect(await run({ command_id: "ra", type: "remove_script", payload: { name: "probe" } })).toMatchObject({
    status: "OK",
    output: { name: "probe", version: 6, removed: [{ version: 1 }, { version: 6 }] },
  });
});

describe("ssh_authorize / ssh_revoke", () => {
  test("writes an expiring, restricted key line atomically with mode 0600 and revokes it", async () => {
    const ctx = context("ssh");
    const file = ctx.config.authorized_keys_path;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(
      file,
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOperatorKeyKeepMeKeepMeKeepMeKeepMeKeepM operator@laptop\n",
      { mode: 0o644 },
    );
    const key = edKey();
    const before = Date.now();
    const [r] = await executeCommands(
      [
        {
          command_id: "a1",
          type: "ssh_authorize",
          args: { public_key: key, ttl_seconds: 120, session_ref: "sess-1" },
        },
      ],
      ctx,
    );
    expect(r.status).toBe("OK");
    const out = r.output as { expires_at: string; fingerprint: string; path: string; session_ref: string };
    expect(Object.keys(out).sort()).toEqual([
      "expires_at",
      "fingerprint",
      "mode",
      "path",
      "session_ref",
      "target_user",
    ]);
    expect(out).toMatchObject({ mode: "dynamic_ssh_authorize", target_user: "outpost-support" });
    expect(out.path).toBe(file);
    expect(out.session_ref).toBe("sess-1");
    expect(out.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    const expires = Date.parse(out.expires_at);
    expect(expires - before).toBeGreaterThan(118000);
    expect(expires - before).toBeLessThan(122000);
    const lines = fs.readFileSync(file, "utf8").trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain("operator@laptop");
    const [type, blob] = key.trim().split(" ");
    expect(lines[1]).toBe(
      `expiry-time="${formatExpiry(new Date(expires))}",restrict,pty ${type} ${blob} outpost-session:sess-1`,
    );
    expect(lines[1]).toMatch(/^expiry-time="\d{14}Z"/);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);

    // re-authorizing the same session replaces its key instead of adding a second one
    await executeCommands(
      [{ command_id: "a2", type: "ssh_authorize", args: { public_key: edKey(), session_ref: "sess-1" } }],
      ctx,
    );
    expect(fs.readFileSync(file, "utf8").trim().split("\n")).toHaveLength(2);

    const [rv] = await executeCommands(
      [{ command_id: "r1", type: "ssh_revoke", args: { session_ref: "sess-1" } }],
      ctx,
    );
    expect(rv).toEqual({
      command_id: "r1",
      status: "OK",
      output: { mode: "dynamic_ssh_revoke", path: file, session_ref: "sess-1", revoked: 1 },
    });
    expect(fs.readFileSync(file, "utf8")).toContain("operator@laptop");
    expect(fs.readFileSync(file, "utf8")).not.toContain("outpost-session:sess-1");
    const [again] = await executeCommands(
      [{ command_id: "r2", type: "ssh_revoke", args: { session_ref: "sess-1" } }],
      ctx,
    );
    expect(again.output).toMatchObject({ revoked: 0 });
  });

  test("reference payload form (payload.data JSON string + top-level public_key) is accepted", async () => {
    const ctx = context("ssh-ref");
    const [r] = await executeCommands(
      [
        {
          command_id: "x",
          type: "ssh_authorize",
          public_key: edKey(),
          payload: {
            content_type: "application/json",
            name: "ref9",
            data: JSON.stringify({ session_ref: "ref9", ttl_seconds: 60 }),
          },
        },
      ],
      ctx,
    );
    expect(r.status).toBe("OK");
    expect(fs.readFileSync(ctx.config.authorized_keys_path, "utf8")).toContain("outpost-session:ref9");
  });

  test("target_user: the configured support user is accepted and reported; any other is refused", async () => {
    const ctx = context("ssh-user", { ssh_target_user: "fleet-support" });
    const authorize = (data: Record<string, unknown>) =>
      executeCommands(
        [
          {
            command_id: `t-${String(data.target_user)}`,
            type: "ssh_authorize",
            public_key: edKey(),
            payload: { name: "u1", data: JSON.stringify({ session_ref: "u1", ttl_seconds: 60, ...data }) },
          },
        ],
        ctx,
      ).then((r) => r[0]);
    expect(await authorize({ target_user: "fleet-support" })).toMatchObject({
      status: "OK",
      output: { mode: "dynamic_ssh_authorize", target_user: "fleet-support", session_ref: "u1" },
    });
    expect(await authorize({})).toMatchObject({ status: "OK", output: { target_user: "fleet-support" } });
    for (const user of ["root", "outpost-support", 7]) {
      const r = await authorize({ target_user: user });
      expect(r.status).toBe("FAILED");
      expect(r.error).toStartWith("unsupported target_user");
      expect(r.output).toBeUndefined();
    }
    const lines = fs.readFileSync(ctx.config.authorized_keys_path, "utf8").trim().split("\n");
    expect(lines).toHaveLength(1); // refused commands wrote nothing
  });

  test("refuses unsupported key types, mismatched blobs, bad refs and TTLs", async () => {
    const ctx = context("ssh-bad");
    const ed = edKey();
    const [, edBlob] = ed.split(" ");
    const dsa = "ssh-dss AAAAB3NzaC1kc3MAAACBAP";
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ public_key: dsa, session_ref: "s" }, /unsupported key type "ssh-dss"/],
      [{ public_key: `sk-ssh-ed25519@openssh.com ${edBlob}`, session_ref: "s" }, /unsupported key type/],
      [{ public_key: `ssh-rsa ${edBlob}`, session_ref: "s" }, /does not match its key type/],
      [{ public_key: `command="sh" ${ed}`, session_ref: "s" }, /unsupported key type/],
      [{ public_key: `${ed}\nssh-ed25519 ${edBlob}`, session_ref: "s" }, /single line/],
      [{ public_key: ed, session_ref: "bad ref" }, /session_ref/],
      [{ public_key: ed, session_ref: "s", ttl_seconds: 0 }, /positive integer/],
      [{ public_key: ed, session_ref: "s", ttl_seconds: 999999 }, /at most 3600/],
      [{ session_ref: "s" }, /missing public_key/],
    ];
    for (const [args, message] of cases) {
      const [r] = await executeCommands([{ command_id: "k", type: "ssh_authorize", args }], ctx);
      expect(r.status).toBe("FAILED");
      expect(r.error).toMatch(message);
    }
    expect(fs.existsSync(ctx.config.authorized_keys_path)).toBe(false);
  });

  test("running as root, the file gets the owner of its directory (sshd reads it as the login user)", async () => {
    if (process.getuid?.() !== 0) return;
    const ctx = context("ssh-owner");
    const dir = path.dirname(ctx.config.authorized_keys_path);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.chownSync(dir, 65534, 65534);
    const [r] = await executeCommands(
      [{ command_id: "o", type: "ssh_authorize", args: { public_key: edKey(), session_ref: "own" } }],
      ctx,
    );
    expect(r.status).toBe("OK");
    const st = fs.statSync(ctx.config.authorized_keys_path);
    expect([st.uid, st.gid, st.mode & 0o777]).toEqual([65534, 65534, 0o600]);
  });

  test("server shapes: no session_ref → the command id is the ref; ssh_revoke takes args[0]", async () => {
    const ctx = context("ssh-shapes");
    const [a] = await executeCommands(
      [{ command_id: "cmd-77", type: "ssh_authorize", public_key: edKey(), args: [] }],
      ctx,
    );
    expect(a.output).toMatchObject({ session_ref: "cmd-77" });
    expect(fs.readFileSync(ctx.config.authorized_keys_path, "utf8")).toContain("outpost-session:cmd-77");
    const [r] = await executeCommands([{ command_id: "rv", type: "ssh_revoke", args: ["cmd-77"] }], ctx);
    expect(r.output).toMatchObject({ mode: "dynamic_ssh_revoke", session_ref: "cmd-77", revoked: 1 });
  });

  test("parsePublicKey accepts ecdsa and rsa keys", () => {
    const ecdsa = utils.generateKeyPairSync("ecdsa", { bits: 256 }).public;
    expect(parsePublicKey(ecdsa).type).toBe("ecdsa-sha2-nistp256");
    const rsa = utils.generateKeyPairSync("rsa", { bits: 2048 }).public;
    expect(parsePublicKey(rsa).type).toBe("ssh-rsa");
  });

  test("expired agent-managed keys are pruned on the next write", async () => {
    const ctx = context("ssh-prune");
    const file = ctx.config.authorized_keys_path;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const [type, blob] = edKey().split(" ");
    fs.writeFileSync(
      file,
      `expiry-time="20000101000000Z",restrict,pty ${type} ${blob} outpost-session:old\n`,
    );
    await executeCommands(
      [{ command_id: "n", type: "ssh_authorize", args: { public_key: edKey(), session_ref: "new" } }],
      ctx,
    );
    const text = fs.readFileSync(file, "utf8");
    expect(text).not.toContain("outpost-session:old");
    expect(text).toContain("outpost-session:new");
  });
});
