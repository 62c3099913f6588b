import { valueAt } from "../telemetry/service";
import type { CompiledRule } from "./evaluation";
import { parseNumber } from "./validation";

type Ordered = ">" | ">=" | "<" | "<=";
const ORDERED = new Set<string>([">", ">=", "<", "<="]);

/** Numeric rules on one field with one ordering operator, sorted by threshold. */
interface Group {
  path: string[];
  operator: Ordered;
  rules: CompiledRule[];
  limits: number[];
}

/** A payload value as a numeric rule reads it (conditionHolds): a number, or a numeric string. */
export function numericValue(value: unknown): number | undefined {
  return typeof value === "number" ? value : typeof value === "string" ? parseNumber(value) : undefined;
}

/** First index whose limit is ≥ v (`strict`: > v). */
function bound(limits: number[], v: number, strict: boolean): number {
  let lo = 0;
  let hi = limits.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (strict ? limits[mid]! <= v : limits[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The rules of a device arranged so an event costs a binary search per (field, operator) instead of a
 * comparison per rule: with hundreds of threshold rules that rarely fire, almost every rule neither
 * holds nor has a pending state, and evaluating it would change nothing (see `step`). `candidates`
 * returns exactly the rules whose evaluation can change something: those whose condition holds, those
 * with a state, and every rule the index cannot order (text, `=`, `!=`).
 */
export class RuleIndex {
  private readonly groups: Group[] = [];
  private readonly others: CompiledRule[] = [];

  constructor(readonly rules: readonly CompiledRule[]) {
    const byKey = new Map<string, Group>();
    for (const rule of rules) {
      if (!rule.numeric || !ORDERED.has(rule.operator)) {
        this.others.push(rule);
        continue;
      }
      if (rule.limit === undefined) continue; // such a rule never holds (conditionHolds: undefined)
      const key = `${rule.operator} ${rule.conditionField}`;
      let group = byKey.get(key);
      if (!group) {
        group = { path: rule.path, operator: rule.operator as Ordered, rules: [], limits: [] };
        byKey.set(key, group);
        this.groups.push(group);
      }
      group.rules.push(rule);
    }
    for (const group of this.groups) {
      group.rules.sort((a, b) => a.limit! - b.limit!);
      group.limits = group.rules.map((r) => r.limit!);
    }
  }

  /** Appends to `out` the rules to evaluate for this payload (`stated`: rule ids with a state). */
  candidates(payload: unknown, stated: ReadonlyMap<number, unknown>, out: CompiledRule[]): void {
    for (const rule of this.others) out.push(rule);
    for (const group of this.groups) {
      const v = numericValue(valueAt(payload, group.path));
      if (v === undefined) continue; // no usable value: no rule of the group changes anything
      let from = 0;
      let to = group.rules.length;
      switch (group.operator) {
        case ">":
          to = bound(group.limits, v, false);
          break;
        case ">=":
          to = bound(group.limits, v, true);
          break;
        case "<":
          from = bound(group.limits, v, true);
          break;
        case "<=":
          from = bound(group.limits, v, false);
          break;
      }
      for (let i = from; i < to; i++) out.push(group.rules[i]!);
      if (stated.size === 0) continue;
      for (let i = 0; i < from; i++) if (stated.has(group.rules[i]!.id)) out.push(group.rules[i]!);
      for (let i = to; i < group.rules.length; i++)
        if (stated.has(group.rules[i]!.id)) out.push(group.rules[i]!);
    }
  }
}
