import { afterAll, describe, expect, test } from "bun:test";
import { createBuiltins } from "../../agent/builtins/index.ts";
import { detectIdentity } from "../../agent/identity.ts";
import { type RunOptions, runScript, type ScriptReport } from "../../agent/scripts/runner.ts";
import { buildHeartbeatBody, heartbeatLimitProblem } from "../../agent/telemetry.ts";
import * as agentLimits from "../../agent/telemetry-limits.ts";
import * as deviceValidation from "../../modules/devices/validation.ts";
import * as heartbeatService from "../../modules/heartbeat/service.ts";
import * as jsonBody from "../../modules/platform/json-body.ts";
import { parseScript } from "../../shared/scripts/frontmatter.ts";
import { onTheWire } from "../helpers/agent-telemetry.ts";
import { scriptText, tempDir, testConfig } from "./helpers.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const config = testConfig(tmp.dir);

function opts(): RunOptions {
  return { timeoutMs: 2000, warnMs: 1000, memoryMb: 32, builtins: createBuiltins(config, "t") };
}

async function run(body: string) {
  return (await runScript(parseScript(scriptText("t", 1, body)), opts())).report;
}

describe("the agent's check of the telemetry limits it shares with the server", () => {
  test("finds the same violations as the server's check", () => {
    const deep = (n: number): unknown => (n === 0 ? 1 : { d: deep(n - 1) });
    const samples: unknown[] = [
      { a: "x".repeat(16_384) },
      { a: "x".repeat(16_385) },
      { a: "é".repeat(8_193) },
      deep(9),
      deep(10),
      { list: Array.from({ length: 1025 }, () => 0) },
      Object.fromEntries(Array.from({ length: 513 }, (_, i) => [`k${i}`, i])),
      { a: Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`k${i}`, i])), b: [1, { c: 2 }] },
    ];
    for (const sample of samples) {
      const server = jsonBody.jsonLimitViolation(sample, deviceValidation.TELEMETRY_LIMITS);
      const agent = agentLimits.jsonLimitViolation(sample, agentLimits.TELEMETRY_LIMITS);
      const found: { limit: string; max: number } | undefined = agent && {
        limit: agent.limit,
        max: agent.max,
      };
      expect(found).toEqual(server);
    }
  });
});

describe("a script output beyond the limits", () => {
  test("a 20 KB string becomes an execution error naming the field (no output sent)", async () => {
    const r = await run('function main() { return { ok: true, blob: "x".repeat(20000) }; }');
    expect(r.status).toBe("error");
    expect(r.validation_status).toBe("skipped");
    expect(r.output).toBeUndefined();
    expect(r.error).toEqual({
      type: "execution",
      message: "output exceeds telemetry limits: output.blob has a string longer than 16384 bytes",
    });
  });

  test("too many keys in one object, too many array items, too deep: errors; just within: fine", async () => {
    const keys = await run(
      "function main() { const o = {}; for (let i = 0; i < 513; i++) o['k' + i] = i; return o; }",
    );
    expect(keys.error?.message).toBe(
      "output exceeds telemetry limits: output has more than 512 keys in one object",
    );
    const items = await run("function main() { return { list: new Array(1025).fill(0) }; }");
    expect(items.error?.message).toContain("output.list has more than 1024 array items");
    // the output sits at depth 5 of the checked payload, so it may nest 6 levels (itself included)
    const deep = await run("function main() { return { a: { b: { c: { d: { e: { f: { g: 1 } } } } } } }; }");
    expect(deep.error?.message).toBe(
      "output exceeds telemetry limits: output.a.b.c.d.e.f has nested deeper than 6 levels",
    );
    const ok = await run(
      'function main() { return { a: { b: { c: { d: { e: { f: 1 } } } } }, s: "x".repeat(16384), l: new Array(1024).fill(1) }; }',
    );
    expect(ok.status).toBe("success");
  });
});

describe("the heartbeat body", () => {
  const identity = detectIdentity(null);
  const report = (output: Record<string, unknown>): ScriptReport => ({
    status: "success",
    validation_status: "valid",
    duration_ms: 3,
    output,
  });
  const body = (reports: Map<string, ScriptReport>) =>
    buildHeartbeatBody({
      uuid: "7c9e6679-7425-40de-944b-e07fc1f90ae7",
      identity,
      reports,
      schema: { product: "p", version: "s-000000000000", type: "object", properties: {} },
      connection: { state: "disconnected", active: false },
      collectedAt: new Date(),
      collectDurationMs: 5,
      agentStartedAt: Date.now(),
    });

  test("above the 256 KiB body cap, the largest outputs are left out until it fits; the server accepts it", () => {
    const reports = new Map<string, ScriptReport>();
    for (let i = 0; i < 20; i++) reports.set(`s${i}`, report({ text: "y".repeat(15_000 + i) }));
    reports.set("small", report({ value: 1 }));
    const hb = body(reports);
    expect(heartbeatLimitProblem(hb)).toBeNull();
    expect(Buffer.byteLength(JSON.stringify(hb))).toBeLessThanOrEqual(256 * 1024);
    expect(() => heartbeatService.parseHeartbeat(onTheWire(hb))).not.toThrow();
    const scripts = hb.telemetry.scripts;
    expect(scripts.small.data.output).toEqual({ value: 1 });
    const dropped = Object.keys(scripts).filter((n) => scripts[n].data.output === undefined);
    expect(dropped.length).toBeGreaterThan(0);
    // the largest ones went first
    expect(dropped).toContain("s19");
    expect(scripts.s0.data.output).toBeDefined();
    expect(scripts.s19.data).toMatchObject({
      status: "error",
      validation_status: "skipped",
      error: { type: "execution", message: expect.stringMatching(/^output exceeds telemetry limits: /) },
    });
    expect(hb.telemetry.meta.errors).toContainEqual(
      expect.stringMatching(/^s19: output exceeds telemetry limits/),
    );
  });

  test("the output depth the agent allows is exactly what the server accepts", () => {
    const nest = (levels: number): Record<string, unknown> =>
      levels === 1 ? { v: 1 } : { n: nest(levels - 1) };
    const ok = body(new Map([["d", report(nest(6))]]));
    expect(agentLimits.outputLimitProblem(nest(6))).toBeNull();
    expect(() => heartbeatService.parseHeartbeat(onTheWire(ok))).not.toThrow();
    expect(agentLimits.outputLimitProblem(nest(7))).toMatch(/nested deeper than 6 levels/);
    // built without the agent's check, one level more is refused by the server
    const tooDeep = structuredClone(ok);
    (tooDeep.telemetry.scripts.d.data as ScriptReport).output = nest(7);
    expect(() => heartbeatService.parseHeartbeat(onTheWire(tooDeep))).toThrow(/depth/);
  });

  test("more than 4096 keys in total: outputs are left out until the server accepts it", () => {
    const reports = new Map<string, ScriptReport>();
    for (let i = 0; i < 10; i++) {
      reports.set(`k${i}`, report(Object.fromEntries(Array.from({ length: 500 }, (_, j) => [`f${j}`, j]))));
    }
    const hb = body(reports);
    expect(heartbeatLimitProblem(hb)).toBeNull();
    expect(() => heartbeatService.parseHeartbeat(onTheWire(hb))).not.toThrow();
    const kept = Object.values(hb.telemetry.scripts).filter((s) => s.data.output !== undefined);
    expect(kept.length).toBeGreaterThanOrEqual(7);
    expect(kept.length).toBeLessThan(10);
  });
});
