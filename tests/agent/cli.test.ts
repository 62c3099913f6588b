import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { runAgent, scriptText, tempDir } from "./helpers.ts";

const tmp = tempDir("outpost-cli-");
afterAll(() => tmp.cleanup());
const env = { HOME: path.join(tmp.dir, "home"), OUTPOST_AGENT_STATE_DIR: path.join(tmp.dir, "state") };

function file(name: string, text: string) {
  const p = path.join(tmp.dir, name);
  fs.writeFileSync(p, text);
  return p;
}

const good = file(
  "good.js",
  scriptText(
    "good",
    2,
    'function main() { console.log("computing"); return { name: "x", values: [1, 2], nested: { ok: true } }; }',
    "type: object\nrequired: [name]\nproperties:\n  name: { type: string }",
  ),
);
const invalid = file(
  "invalid.js",
  scriptText(
    "invalid",
    1,
    'function main() { return { temp: "hot" }; }',
    "type: object\nrequired: [temp, unit]\nproperties:\n  temp: { type: number }",
  ),
);
const broken = file("broken.js", scriptText("broken", 1, "function main() { return {; }"));
const noFrontMatter = file("plain.js", "function main() { return {}; }\n");

setDefaultTimeout(20000);

describe("CLI", () => {
  const helps: [string[], string][] = [
    [["--help"], "Usage: outpost-agent [options] [command]"],
    [["register", "--help"], "Usage: outpost-agent register [options]"],
    [["poll", "--help"], "Usage: outpost-agent poll [options]"],
    [["status", "--help"], "Usage: outpost-agent status [options]"],
    [["script", "--help"], "Usage: outpost-agent script [options] [command]"],
    [["script", "install", "--help"], "Usage: outpost-agent script install [options] <path>"],
    [["script", "list", "--help"], "Usage: outpost-agent script list [options]"],
    [["script", "remove", "--help"], "Usage: outpost-agent script remove [options] <name> [version]"],
    [["script", "test", "--help"], "Usage: outpost-agent script test [options] <target>"],
    [["script", "repl", "--help"], "Usage: outpost-agent script repl [options]"],
  ];
  for (const [args, usage] of helps) {
    test(`${args.join(" ")} prints usage and exits 0`, async () => {
      const r = await runAgent(args, env);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(usage);
    });
  }

  test("the help names run_script and the config key that allows it, with its default", async () => {
    for (const args of [["--help"], ["poll", "--help"]]) {
      const r = await runAgent(args, env);
      expect(r.stdout.replace(/\s+/g, " ")).toContain("run_script_enabled: true");
      expect(r.stdout).toContain("default false");
    }
  });

  test("unknown commands and options are usage errors (exit 2)", async () => {
    const r = await runAgent(["frobnicate"], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown command 'frobnicate'");
    const o = await runAgent(["poll", "--bogus"], env);
    expect(o.code).toBe(2);
    expect(o.stderr).toContain("unknown option '--bogus'");
  });

  test("--log-level accepts every level the configuration allows, fatal included", async () => {
    for (const level of ["trace", "debug", "info", "warn", "error", "fatal", "silent"]) {
      const r = await runAgent(["--log-level", level, "script", "list"], env);
      expect({ level, code: r.code, invalid: r.stderr.includes("Allowed choices") }).toEqual({
        level,
        code: 0,
        invalid: false,
      });
    }
    const bad = await runAgent(["--log-level", "loud", "script", "list"], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("Allowed choices are trace, debug, info, warn, error, fatal, silent");
  }, 60000);

  test("an invalid configuration is one clear line and exit 2", async () => {
    const cfg = file("bad.yaml", "poll_interval_s: -5\n");
    const r = await runAgent(["status", "--config", cfg], env);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      `error: invalid configuration: poll_interval_s: expected number to be greater or equal to 1 (in ${cfg} or OUTPOST_AGENT_* environment)`,
    );
  });

  test("poll before register fails with a hint (exit 1)", async () => {
    const r = await runAgent(["poll", "--once"], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("no device identity found; run `outpost-agent register` first");
  });

  test("script test prints the output as YAML and exits 0", async () => {
    const r = await runAgent(["script", "test", good], env);
    expect(r.code).toBe(0);
    expect(YAML.parse(r.stdout)).toEqual({ name: "x", values: [1, 2], nested: { ok: true } });
    expect(r.stderr).toBe("");
  });

  test("script test --verbose adds status, duration and console output", async () => {
    const r = await runAgent(["script", "test", good, "--verbose"], env);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("# good v2");
    expect(r.stderr).toMatch(/# status: success, validation: valid, duration: \d+ ms/);
    expect(r.stderr).toContain("# console: computing");
  });

  test("script test: a validation failure prints a readable report and exits 1", async () => {
    const r = await runAgent(["script", "test", invalid], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("Output validation failed:");
    expect(r.stderr).toContain("❌ unit: required field missing");
    expect(r.stderr).toContain("❌ temp: expected number");
    const v = await runAgent(["script", "test", invalid, "--verbose"], env);
    expect(v.stderr).toContain("(keyword: required");
    expect(YAML.parse(v.stdout)).toEqual({ temp: "hot" });
  });

  test("script test: syntax errors, bad front matter and missing files exit 1", async () => {
    const s = await runAgent(["script", "test", broken], env);
    expect(s.code).toBe(1);
    expect(s.stderr).toMatch(/^error: script failed \(syntax\): .*line 7/m);
    const p = await runAgent(["script", "test", noFrontMatter], env);
    expect(p.code).toBe(1);
    expect(p.stderr).toContain("must start with a front-matter block comment");
    const m = await runAgent(["script", "test", path.join(tmp.dir, "nope.js")], env);
    expect(m.code).toBe(1);
    expect(m.stderr).toContain("script file not found");
  });

  test("script test by name runs an installed (built-in) script", async () => {
    const r = await runAgent(["script", "test", "memory"], env);
    expect(r.code).toBe(0);
    expect(YAML.parse(r.stdout).used_pct).toBeGreaterThan(0);
  });

  test("script install / list / remove with version rules", async () => {
    const inst = await runAgent(["script", "install", good], env);
    expect(inst.code).toBe(0);
    expect(inst.stdout.trim()).toBe(
      `Installed good v2 at ${path.join(tmp.dir, "state", "scripts", "good@v2.js")}`,
    );
    const dup = await runAgent(["script", "install", good], env);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain("version must be greater than v2");
    expect((await runAgent(["script", "install", good, "--force"], env)).code).toBe(0);
    const list = await runAgent(["script", "list"], env);
    expect(list.stdout).toMatch(/^NAME\s+VERSION\s+PATH$/m);
    expect(list.stdout).toMatch(/^good\s+\*v2\s+\S+good@v2\.js$/m);
    expect(list.stdout).toMatch(/^load\s+\*v1/m);
    const rm = await runAgent(["script", "remove", "good"], env);
    expect(rm.code).toBe(0);
    expect(rm.stdout).toContain("Removed good v2");
    const again = await runAgent(["script", "remove", "good"], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("script not found: good");
    const badInstall = await runAgent(["script", "install", broken.replace("broken.js", "missing.js")], env);
    expect(badInstall.code).toBe(1);
    expect(badInstall.stderr).toContain("cannot read");
  }, 60000);
});
