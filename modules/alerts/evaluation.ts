import { type DeviceBrief, deviceSummaries } from "../devices/service";
import { scopeMembers } from "../fleet/service";
import type { Config } from "../platform/config";
import type { Sql } from "../platform/database";
import { readConsoleSettings } from "../settings/service";
import {
  type FeedPosition,
  optionKeyPath,
  type TelemetryEvent,
  telemetryAfter,
  telemetryArrivedAfter,
  valueAt,
} from "../telemetry/service";
import { openAlert, resolveOpen } from "./lifecycle";
import { type NotifyPolicy, notifyPolicy } from "./notifications/queue";
import { numericValue, RuleIndex } from "./rule-index";
import { type AlertRule, enabledRules, ruleScope } from "./rules";
import { parseNumber } from "./validation";

/**
 * Durable evaluation (docs/alerts.md). Heartbeats only store telemetry; this job follows the
 * telemetry stream from a cursor kept in `alert_evaluation_cursor`. One run = one transaction that
 * locks the cursor row (one evaluator at a time), reads a batch, updates per-(rule, device) state,
 * opens/resolves alerts, queues notifications and advances the cursor. A worker killed mid-run
 * rolls all of it back, and the retry redoes the same batch: nothing is duplicated or skipped.
 */
export const EVALUATE_TASK = "alerts_evaluate";
/** Rows newer than this may belong to heartbeats still committing: read them on the next run. */
export const SETTLE_MS = 2000;
const BATCH = 2000;

function asText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/**
 * A rule prepared once per run: its option key turned into the payload path the agent's telemetry
 * puts the field at (telemetry's `optionKeyPath`: the stored `conditionField` stays the option key),
 * thresholds parsed, a device list as a set. Evaluation runs every rule of a product against every event,
 * so nothing is re-parsed per event (bench/alerts).
 */
export interface CompiledRule extends AlertRule {
  path: string[];
  numeric: boolean;
  limit: number | undefined;
  clear: number | undefined;
  scope: Set<string> | null;
}

export function compileRule(rule: AlertRule): CompiledRule {
  return {
    ...rule,
    path: optionKeyPath(rule.conditionField),
    numeric: rule.fieldType === "number" || rule.fieldType === "integer",
    limit: parseNumber(rule.thresholdValue),
    clear: rule.clearThreshold === null ? undefined : parseNumber(rule.clearThreshold),
    scope: rule.deviceIds ? new Set(rule.deviceIds) : null,
  };
}

/** Whether `value` meets the rule's condition. A numeric rule ignores values that are not numbers. */
export function conditionHolds(rule: CompiledRule, value: unknown) {
  if (value === undefined || value === null) return undefined;
  if (rule.numeric) {
    const v = numericValue(value);
    const limit = rule.limit;
    if (v === undefined || limit === undefined) return undefined;
    switch (rule.operator) {
      case ">":
        return v > limit;
      case ">=":
        return v >= limit;
      case "<":
        return v < limit;
      case "<=":
        return v <= limit;
      case "=":
        return v === limit;
      case "!=":
        return v !== limit;
      default:
        return undefined;
    }
  }
  const text = asText(value);
  switch (rule.operator) {
    case "is":
      return text === rule.thresholdValue;
    case "is not":
      return text !== rule.thresholdValue;
    case "contains":
      return text.includes(rule.thresholdValue);
    case "doesn't contain":
      return !text.includes(rule.thresholdValue);
    default:
      return undefined;
  }
}

/** Hysteresis: past the clear threshold (or simply not holding, without one). */
function recovered(rule: CompiledRule, value: unknown): boolean {
  const clear = rule.clear;
  if (clear === undefined) return true;
  const v = typeof value === "number" ? value : parseNumber(String(value));
  if (v === undefined) return true;
  return rule.operator.startsWith(">") ? v <= clear : v >= clear;
}

/**
 * The enabled rules of a run by scope: product-scoped ones by product (a device's product decides, no
 * query), the others in one list. View and query scopes are decided in SQL once per batch for the
 * batch's devices (`members`, one statement for every such rule: scopeMembers), so a rule's scope
 * costs nothing per event and nothing per rule, and a view's members are whoever matches at that
 * batch: a tag set a second ago counts.
 */
interface RuleSet {
  byProduct: Map<string, CompiledRule[]>;
  others: CompiledRule[];
}

/** A view or query scope's key: rules sharing a view (or the same query text) share one membership check. */
const scopeKey = (rule: CompiledRule) =>
  rule.scopeType === "view"
    ? `view ${rule.scopeViewId}`
    : rule.scopeType === "query"
      ? `query ${rule.scopeQuery}`
      : "";

/** The rules that apply to a device: its product's (schema product, else product name), and the others in scope. */
function rulesFor(rules: RuleSet, members: Map<string, Set<string>>, device: DeviceBrief): CompiledRule[] {
  if (!device.approved) return [];
  const own = rules.byProduct.get(device.schemaProduct ?? device.productName ?? "") ?? [];
  const extra = rules.others.filter((r) =>
    r.scopeType === "fleet"
      ? true
      : r.scopeType === "devices"
        ? (r.scope?.has(device.id) ?? false)
        : (members.get(scopeKey(r))?.has(device.id) ?? false),
  );
  return extra.length === 0 ? own : [...own, ...extra].sort((a, b) => a.id - b.id);
}

/** Which of the batch's devices each view or query scope holds now: one statement for all of them. */
async function batchMembers(
  tx: Sql,
  config: Config,
  rules: RuleSet,
  deviceIds: string[],
): Promise<Map<string, Set<string>>> {
  const byKey = new Map<string, CompiledRule>();
  for (const rule of rules.others) if (scopeKey(rule)) byKey.set(scopeKey(rule), rule);
  if (byKey.size === 0) return new Map();
  const { onlineWindowSeconds } = await readConsoleSettings(tx, {
    onlineWindowSeconds: config.deviceOnlineWindowSeconds,
    telemetryRetentionDays: config.telemetryRetentionDays,
  });
  const keys = [...byKey.keys()];
  const sets = await scopeMembers(
    tx,
    keys.map((k) => ruleScope(byKey.get(k)!)),
    deviceIds,
    onlineWindowSeconds,
  );
  return new Map(keys.map((k, i) => [k, sets[i]!]));
}

/** `alerting`: this episode opened an alert that auto-resolve has not closed yet. */
type State = { breachSince: Date | null; clearSince: Date | null; alerting: boolean; evaluatedAt: Date };
type StateRow = {
  rule_id: number;
  device_id: string;
  breach_since: Date | null;
  clear_since: Date | null;
  alerting: boolean;
  evaluated_at: Date;
};

const sameTime = (a: Date | null, b: Date | null) => (a?.getTime() ?? null) === (b?.getTime() ?? null);
/** Only a change of timing or alerting is written: a steady stream of normal values writes nothing. */
function differs(a: State | undefined, b: State): boolean {
  if (!a) return b.breachSince !== null || b.clearSince !== null || b.alerting;
  return (
    !sameTime(a.breachSince, b.breachSince) ||
    !sameTime(a.clearSince, b.clearSince) ||
    a.alerting !== b.alerting
  );
}

export function ruleMessage(rule: Pick<AlertRule, "conditionField" | "operator" | "thresholdValue">): string {
  return `Rule Breach: ${rule.conditionField} ${rule.operator} ${rule.thresholdValue}`;
}

/** Applies one event to one rule's state; opens or resolves the alert when the timing says so. */
type Effect = { open: string } | { resolve: true } | undefined;
const UNCHANGED = { next: undefined, effect: undefined } as const;

/**
 * Applies one event to one rule's state (synchronous: the common case changes nothing and must
 * stay cheap); says whether to open or resolve the alert.
 */
function step(
  rule: CompiledRule,
  event: TelemetryEvent,
  state: State | undefined,
): { next: State | undefined; effect: Effect } {
  const value = valueAt(event.payload, rule.path);
  const holds = conditionHolds(rule, value);
  if (holds === undefined) return UNCHANGED; // no usable value yet
  // The common case: the condition does not hold and nothing is pending. Allocate nothing.
  if (!holds && (!state || (!state.alerting && state.breachSince === null && state.clearSince === null)))
    return UNCHANGED;
  const t = event.recordedAt;
  const next: State = {
    breachSince: null,
    clearSince: null,
    alerting: state?.alerting ?? false,
    evaluatedAt: t,
  };
  if (holds) {
    next.breachSince = state?.breachSince ?? t;
    // One alert per episode: opened once when `for` has elapsed, not again while it holds.
    if (!next.alerting && t.getTime() - next.breachSince.getTime() >= rule.forMinutes * 60_000) {
      next.alerting = true;
      return { next, effect: { open: asText(value).slice(0, 500) } };
    }
  } else if (recovered(rule, value) && next.alerting) {
    next.clearSince = state?.clearSince ?? t;
    if (
      rule.resolveAfterMinutes !== null &&
      t.getTime() - next.clearSince.getTime() >= rule.resolveAfterMinutes * 60_000
    ) {
      next.alerting = false;
      next.clearSince = null;
      return { next, effect: { resolve: true } };
    }
  }
  return { next, effect: undefined };
}

async function apply(tx: Sql, rule: CompiledRule, deviceId: string, effect: Effect, policy: NotifyPolicy) {
  if (!effect) return;
  if ("open" in effect) {
    const open = { type: "threshold" as const, severity: rule.severity, message: ruleMessage(rule) };
    await openAlert(
      tx,
      { ...open, deviceId, ruleId: rule.id, value: effect.open, recipients: rule.recipients },
      policy,
    );
  } else {
    const match = { deviceId, ruleId: rule.id, type: "threshold" as const };
    await resolveOpen(tx, match, { how: "auto" }, policy, rule.recipients);
  }
}

export interface EvaluationResult {
  events: number;
  evaluations: number;
  /** More telemetry is waiting (the batch was full). */
  more: boolean;
  /** Nothing was ready, but telemetry newer than the settle margin has arrived (read it soon). */
  unsettled: boolean;
}

/** One evaluation run (see above). `beforeCommit` lets tests kill the process mid-transaction. */
export async function evaluateAlerts(
  sql: Sql,
  config: Config,
  options: { beforeCommit?: () => Promise<void>; settleMs?: number } = {},
): Promise<EvaluationResult> {
  // Read only when an alert opens or resolves: most passes change nothing (two settings reads saved).
  let policyRead: Promise<NotifyPolicy> | undefined;
  const policy = () => (policyRead ??= notifyPolicy(config, sql));
  const rules: RuleSet = { byProduct: new Map(), others: [] };
  for (const rule of await enabledRules(sql)) {
    const compiled = compileRule(rule);
    if (rule.scopeType !== "product") rules.others.push(compiled);
    else rules.byProduct.set(rule.productName, [...(rules.byProduct.get(rule.productName) ?? []), compiled]);
  }
  const ruleIds = [...[...rules.byProduct.values()].flat(), ...rules.others].map((r) => r.id);
  const until = new Date(Date.now() - (options.settleMs ?? SETTLE_MS));
  return (await sql.begin(async (txRaw) => {
    const tx = txRaw as unknown as Sql;
    await tx`insert into alert_evaluation_cursor (id, recorded_at, event_id)
      values (1, now() - interval '5 minutes', '00000000-0000-0000-0000-000000000000') on conflict do nothing`;
    const [cursor] = await tx<{ recorded_at: Date; event_id: string }[]>`
      select recorded_at, event_id from alert_evaluation_cursor where id = 1 for update`;
    const after: FeedPosition = { recordedAt: cursor!.recorded_at, id: cursor!.event_id };
    const events = await telemetryAfter(tx, after, until, BATCH);
    let evaluations = 0;
    if (events.length > 0) {
      const devices = await deviceSummaries(tx, [...new Set(events.map((e) => e.deviceId))]);
      // States per device, then per rule id: no key strings built in the hot loop.
      const states = new Map<string, Map<number, State>>();
      const statesOf = (deviceId: string) => {
        const map = states.get(deviceId) ?? new Map<number, State>();
        states.set(deviceId, map);
        return map;
      };
      const stateRows = await tx<StateRow[]>`select * from alert_rule_states
        where rule_id = any(${ruleIds}::int[]) and device_id = any(${[...devices.keys()]}::uuid[])`;
      for (const s of stateRows) {
        statesOf(s.device_id).set(s.rule_id, {
          breachSince: s.breach_since,
          clearSince: s.clear_since,
          alerting: s.alerting,
          evaluatedAt: s.evaluated_at,
        });
      }
      // A heartbeat ends the device's offline alert (reference message): one query finds them, and
      // only a heartbeat received after the alert opened counts (evaluation may lag behind).
      const offline = await tx<{ device_id: string; since: string }[]>`select device_id,
          to_char(min(triggered_at) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as since
        from alerts where type = 'offline' and status <> 'resolved' and device_id = any(${[...devices.keys()]}::uuid[])
        group by device_id`;
      for (const { device_id, since } of offline) {
        const after = Date.parse(since);
        if (!events.some((e) => e.deviceId === device_id && e.recordedAt.getTime() > after)) continue;
        await resolveOpen(
          tx,
          { deviceId: device_id, type: "offline" },
          { how: "heartbeat", message: "Device heartbeat resumed" },
          await policy(),
        );
      }
      const changed = new Map<string, { ruleId: number; deviceId: string }>();
      // One index per rule list (devices of one product share theirs): a binary search per field
      // finds the few rules an event can affect (modules/alerts/rule-index.ts).
      const members = await batchMembers(
        tx,
        config,
        rules,
        [...devices.values()].filter((d) => d.approved).map((d) => d.id),
      );
      const indexes = new Map<string, RuleIndex>();
      const applicable = new Map(
        [...devices.values()].map((d) => {
          const list = rulesFor(rules, members, d);
          const key = list.map((r) => r.id).join(",");
          if (!indexes.has(key)) indexes.set(key, new RuleIndex(list));
          return [d.id, indexes.get(key)!];
        }),
      );
      const candidates: CompiledRule[] = [];
      for (const event of events) {
        const index = applicable.get(event.deviceId);
        if (!index || index.rules.length === 0) continue;
        const deviceStates = statesOf(event.deviceId);
        evaluations += index.rules.length;
        candidates.length = 0;
        index.candidates(event.payload, deviceStates, candidates);
        for (const rule of candidates) {
          const state = deviceStates.get(rule.id);
          if (state && state.evaluatedAt >= event.recordedAt) continue;
          const { next, effect } = step(rule, event, state);
          if (effect) await apply(tx, rule, event.deviceId, effect, await policy());
          if (next && next !== state && differs(state, next)) {
            deviceStates.set(rule.id, next);
            changed.set(`${rule.id}:${event.deviceId}`, { ruleId: rule.id, deviceId: event.deviceId });
          }
        }
      }
      for (const { ruleId, deviceId } of changed.values()) {
        const s = statesOf(deviceId).get(ruleId)!;
        await tx`insert into alert_rule_states (rule_id, device_id, breach_since, clear_since, alerting, evaluated_at)
          values (${ruleId}, ${deviceId}::uuid, ${s.breachSince?.toISOString() ?? null}::timestamptz,
            ${s.clearSince?.toISOString() ?? null}::timestamptz, ${s.alerting}, ${s.evaluatedAt.toISOString()}::timestamptz)
          on conflict (rule_id, device_id) do update set breach_since = excluded.breach_since,
            clear_since = excluded.clear_since, alerting = excluded.alerting, evaluated_at = excluded.evaluated_at`;
      }
      const last = events[events.length - 1]!;
      await tx`update alert_evaluation_cursor set recorded_at = ${last.recordedAt.toISOString()}::timestamptz,
        event_id = ${last.id}::uuid where id = 1`;
    }
    const unsettled = events.length === 0 && (await telemetryArrivedAfter(tx, after, until));
    await options.beforeCommit?.();
    return { events: events.length, evaluations, more: events.length === BATCH, unsettled };
  })) as EvaluationResult;
}
