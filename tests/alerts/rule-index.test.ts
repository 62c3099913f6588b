// The rule index must hand evaluation every rule whose evaluation can change something: each rule whose
// condition holds, each rule with a state, each rule it cannot order. Checked against the plain
// per-rule condition over many random rules and values, in payloads the agent built.
import { describe, expect, test } from "bun:test";
import { type CompiledRule, compileRule, conditionHolds } from "../../modules/alerts/evaluation";
import { RuleIndex } from "../../modules/alerts/rule-index";
import type { AlertRule } from "../../modules/alerts/rules";
import { valueAt } from "../../modules/telemetry/service";
import { ScriptedAgent, storedPayload } from "../helpers/agent-telemetry";
import { tempDir } from "../helpers/temp";

// A script without output constraints: any value the test picks reaches the payload as it returned it.
const agent = new ScriptedAgent(tempDir("outpost-rule-index-"), "p", [
  { name: "sensor", schema: { type: "object" } },
]);
const payloads = new Map<string, unknown>();
/** What the server stores when the agent's sensor script returns `output` (built once per output). */
async function payloadOf(output: Record<string, unknown>) {
  const key = JSON.stringify(output);
  if (!payloads.has(key))
    payloads.set(key, storedPayload(await agent.heartbeat(crypto.randomUUID(), { sensor: output })));
  return payloads.get(key);
}

let seed = 42;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};
const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;

function rule(id: number): CompiledRule {
  const numeric = random() < 0.85;
  const operator = numeric
    ? pick([">", ">=", "<", "<=", "=", "!="])
    : pick(["is", "is not", "contains", "doesn't contain"]);
  const threshold = numeric
    ? pick([String(Math.round(random() * 100)), "12.5", "-3", "abc"])
    : pick(["on", "off"]);
  return compileRule({
    id,
    name: `r${id}`,
    productName: "p",
    schemaVersion: "v1",
    conditionField: pick(["sensor.temp", "sensor.box.fan", "sensor.load"]),
    fieldType: numeric ? "number" : "string",
    operator,
    thresholdValue: threshold,
    clearThreshold: null,
    forMinutes: 0,
    resolveAfterMinutes: null,
    severity: "warning",
    enabled: true,
    deviceIds: null,
    recipients: [],
  } as unknown as AlertRule);
}

describe("rule index", () => {
  test("candidates = holding ∪ stated ∪ unordered, for random rules and payloads", async () => {
    let held = 0; // the rules' keys reach the values the script reported: conditions do hold
    for (let round = 0; round < 200; round++) {
      const rules = Array.from({ length: 1 + Math.floor(random() * 60) }, (_, i) => rule(i + 1));
      const index = new RuleIndex(rules);
      for (let n = 0; n < 20; n++) {
        const value = pick([Math.round(random() * 110) - 5, 12.5, 50, "42", "x", null, undefined, "on"]);
        const output = { temp: value, load: pick([value, 7, "off"]), box: { fan: pick([value, 3]) } };
        const payload = await payloadOf(output);
        const stated = new Map(rules.filter(() => random() < 0.1).map((r) => [r.id, {}]));
        const out: CompiledRule[] = [];
        index.candidates(payload, stated, out);
        const got = new Set(out.map((r) => r.id));
        expect(got.size).toBe(out.length); // no rule twice
        for (const r of rules) {
          const path = valueAt(payload, r.path);
          if (conditionHolds(r, path) === true) held++;
          const unordered = !r.numeric || !["<", "<=", ">", ">="].includes(r.operator);
          const mustEvaluate =
            conditionHolds(r, path) === true || (stated.has(r.id) && r.limit !== undefined) || unordered;
          if (mustEvaluate && !(stated.has(r.id) && conditionHolds(r, path) === undefined && !unordered))
            expect({
              rule: r.id,
              operator: r.operator,
              limit: r.limit,
              path,
              in: got.has(r.id),
            }).toMatchObject({ in: true });
          if (!mustEvaluate) expect({ rule: r.id, in: got.has(r.id) }).toEqual({ rule: r.id, in: false });
        }
      }
    }
    expect(held).toBeGreaterThan(1000);
  });
});
