import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { BUILTIN_SCRIPT_SOURCES, ensureBuiltinScripts } from "../../agent/builtin-scripts/index.ts";
import { processMemo } from "../../agent/builtins/index.ts";
import { runOptionsFromConfig, runScript } from "../../agent/scripts/runner.ts";
import { ScriptStore } from "../../agent/scripts/store.ts";
import { AGENT_BUILTIN_SCRIPTS } from "../../modules/telemetry/series";
import { parseScript } from "../../shared/scripts/frontmatter.ts";
import { compileOutputSchema } from "../../shared/scripts/validation.ts";
import { tempDir, testConfig } from "./helpers.ts";

// biome-ignore lint/suspicious/noExplicitAny: script output is free-form JSON
type Json = any;

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const config = testConfig(tmp.dir);

describe("built-in scripts", () => {
  const names = BUILTIN_SCRIPT_SOURCES.map((s) => parseScript(s).meta.name);

  test("ship load, cpu, memory, disk, uptime and network", () => {
    expect(names.sort()).toEqual(["cpu", "disk", "load", "memory", "network", "uptime"]);
  });

  for (const source of BUILTIN_SCRIPT_SOURCES) {
    const script = parseScript(source);
    test(`${script.meta.name} produces schema-valid output on this machine`, async () => {
      const { report } = await runScript(script, runOptionsFromConfig(config, script.meta.name));
      expect(report.error).toBeUndefined();
      expect(report.status).toBe("success");
      expect(report.validation_status).toBe("valid");
      expect(compileOutputSchema(script.meta.schema)(report.output)).toBe(true);
    });
  }

  test("values are plausible against /proc", async () => {
    const byName = Object.fromEntries(
      BUILTIN_SCRIPT_SOURCES.map((s) => [parseScript(s).meta.name, parseScript(s)]),
    );
    const run = async (n: string) =>
      (await runScript(byName[n], runOptionsFromConfig(config, n))).report.output as Record<string, Json>;
    const load = await run("load");
    const osLoad = Number(fs.readFileSync("/proc/loadavg", "utf8").split(" ")[0]);
    expect(Math.abs(load.load_1m - osLoad)).toBeLessThan(2); // /proc/loadavg moves every 5 s
    const mem = await run("memory");
    const memTotalKb = Number(/MemTotal:\s+(\d+)/.exec(fs.readFileSync("/proc/meminfo", "utf8"))![1]);
    expect(mem.total_bytes).toBe(memTotalKb * 1024);
    expect(mem.used_pct).toBeGreaterThan(0);
    expect(mem.used_pct).toBeLessThan(100);
    const disk = await run("disk");
    const root = fs.statfsSync("/");
    expect(disk.mounts.find((m: { mount: string }) => m.mount === "/")?.total_bytes).toBe(
      root.blocks * root.bsize,
    );
    const up = await run("uptime");
    expect(
      Math.abs(up.uptime_s - Number(fs.readFileSync("/proc/uptime", "utf8").split(" ")[0])),
    ).toBeLessThan(5);
    const net = await run("network");
    expect(Object.keys(net.interfaces)).toContain("lo");
    processMemo.set("cpu", "sample", null); // as in a freshly started agent
    // The first run reports the average since boot (not a short sample of the agent's own start-up).
    const stat = fs
      .readFileSync("/proc/stat", "utf8")
      .split("\n")[0]!
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    const [user, nice, system, idle, iowait, irq, softirq, steal] = stat as [number, ...number[]];
    const sinceBoot =
      (100 * (user + nice + system! + irq! + softirq! + steal!)) /
      (user + nice! + system! + idle! + iowait! + irq! + softirq! + steal!);
    const cpu1 = await run("cpu");
    expect(cpu1.cores).toBeGreaterThanOrEqual(1);
    expect(Math.abs(cpu1.usage_pct - sinceBoot)).toBeLessThan(1);
    const bootUptimeMs = Number(fs.readFileSync("/proc/uptime", "utf8").split(" ")[0]) * 1000;
    expect(Math.abs(cpu1.interval_ms - bootUptimeMs)).toBeLessThan(5000);
    const cpu2 = await run("cpu");
    expect(cpu2.usage_pct).toBeGreaterThanOrEqual(0);
    expect(processMemo.get("cpu", "sample")).not.toBeNull(); // later runs use the previous sample
  });

  test("installed on first run, not reinstalled after removal, upgraded by a newer shipped version", () => {
    const store = new ScriptStore(path.join(tmp.dir, "scripts-a"));
    expect(ensureBuiltinScripts(store).sort()).toEqual([
      "cpu",
      "disk",
      "load",
      "memory",
      "network",
      "uptime",
    ]);
    expect(store.latest().map((s) => s.meta.name)).toEqual([
      "cpu",
      "disk",
      "load",
      "memory",
      "network",
      "uptime",
    ]);
    expect(ensureBuiltinScripts(store)).toEqual([]);
    store.remove("load");
    expect(ensureBuiltinScripts(store)).toEqual([]);
    expect(store.find("load")).toBeNull();
  });
});

describe("the example script in docs/agent.md", () => {
  test("parses and reports schema-valid output on an agent with the default configuration", async () => {
    const doc = fs.readFileSync(path.resolve(import.meta.dir, "../../docs/agent.md"), "utf8");
    const example = /```js\n(\/\*---[\s\S]*?)```/.exec(doc)?.[1];
    expect(example).toBeDefined();
    const script = parseScript(example!.replaceAll("\n", "\r\n")); // as pasted into the console
    const { report } = await runScript(script, runOptionsFromConfig(config, script.meta.name));
    expect(report.error).toBeUndefined();
    expect(report.output).toEqual({ running: expect.any(Number), total: expect.any(Number) });
  });
});

test("the console's list of the agent's built-in scripts is the agent's", () => {
  expect(BUILTIN_SCRIPT_SOURCES.map((source) => parseScript(source).meta.name).sort()).toEqual([
    ...AGENT_BUILTIN_SCRIPTS,
  ]);
});
