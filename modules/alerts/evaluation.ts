import type { Clock } from "../../shared/clock";
import { type DeviceBrief, deviceSummaries, silentApprovedDevices } from "../devices/service";
import { enqueueJob } from "../jobs/service";
import type { Config } from "../platform/config";
import type { Sql } from "../platform/database";
import { DEFAULT_OFFLINE_ALERT_MINUTES, readConsoleSettings } from "../settings/service";
import {
  type FeedPosition,
  optionKeyPath,
  type TelemetryEvent,
  telemetryAfter,
  telemetryArrivedAfter,
  valueAt,
} from "../telemetry/service";
import { openAlert, resolveAlertsOfRemovedDevices, resolveOpen } from "./lifecycle";
import { type NotifyPolicy, notifyPolicy } from "./notifications/queue";
import { numericValue, RuleIndex } from "./rule-index";
import { type AlertRule, enabledRules } from "./rules";
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
 * thresholds parsed, scope as a set. Evaluation runs every rule of a product against every event,
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

/** The rules that apply to a device: its product's (schema product, else product name), in scope. */
function rulesFor(byProduct: Map<string, CompiledRule[]>, device: DeviceBrief): CompiledRule[] {
  if (!device.approved) return [];
  const rules = byProduct.get(device.schemaProduct ?? device.productName ?? "") ?? [];
  return rules.some((r) => r.scope) ? rules.filter((r) => !r.scope || r.scope.has(device.id)) : rules;
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
  const byProduct = new Map<string, CompiledRule[]>();
  for (const rule of await enabledRules(sql)) {
    const compiled = compileRule(rule);
    byProduct.set(rule.productName, [...(byProduct.get(rule.productName) ?? []), compiled]);
  }
  const ruleIds = [...byProduct.values()].flat().map((r) => r.id);
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
      const indexes = new Map<CompiledRule[], RuleIndex>();
      const applicable = new Map(
        [...devices.values()].map((d) => {
          const rules = rulesFor(byProduct, d);
          if (!indexes.has(rules)) indexes.set(rules, new RuleIndex(rules));
          return [d.id, indexes.get(rules)!];
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

/**
 * Offline alerts (reference §7.4): approved devices silent beyond Settings' offline window get one
 * open `offline` alert; devices seen again since their alert are resolved here too (the heartbeat
 * path resolves them through evaluation; this catches a device whose telemetry was not evaluated).
 */
export async function checkOfflineDevices(
  sql: Sql,
  config: Config,
): Promise<{ opened: number; resolvedRemoved: number }> {
  const settings = await readConsoleSettings(sql, {
    onlineWindowSeconds: config.deviceOnlineWindowSeconds,
    telemetryRetentionDays: config.telemetryRetentionDays,
  });
  const minutes = settings.offlineAlertMinutes ?? DEFAULT_OFFLINE_ALERT_MINUTES;
  const policy = await notifyPolicy(config, sql);
  const silent = await silentApprovedDevices(sql, minutes);
  let opened = 0;
  for (const device of silent) {
    const alert = await sql.begin((tx) =>
      openAlert(
        tx as unknown as Sql,
        {
          type: "offline",
          severity: "critical",
          message: `Device hasn't reported in ${minutes} minutes`,
          deviceId: device.id,
          ruleId: null,
          value: null,
        },
        policy,
      ),
    );
    if (alert) opened++;
  }
  const resolvedRemoved = await resolveRemovedDevices(sql, policy);
  return { opened, resolvedRemoved };
}

/** Open alerts of devices that were deleted, rejected or revoked are resolved (`device_removed`). */
async function resolveRemovedDevices(sql: Sql, policy: NotifyPolicy): Promise<number> {
  const open = await sql<{ device_id: string }[]>`
    select distinct device_id from alerts where status <> 'resolved' limit 10000`;
  const ids = open.map((r) => r.device_id);
  const devices = await deviceSummaries(sql, ids);
  const removed = ids.filter((id) => !devices.get(id)?.approved);
  return (await resolveAlertsOfRemovedDevices(sql, removed, policy)).length;
}

/**
 * A process wakes evaluation at most this often. While telemetry flows, passes schedule each other
 * (jobs/alerts-evaluate.ts), so a wake-up only matters after a silence; one every second was, at rest,
 * a queue insert and a dozen job polls a minute for nothing.
 */
export const WAKE_EVERY_MS = 5000;

/**
 * The heartbeat route's wake-up of alert evaluation (one per process, built by app.ts): called after a
 * heartbeat was stored, it schedules an evaluation run at most every WAKE_EVERY_MS, never awaited by
 * the heartbeat (off its hot path). A heartbeat inside that time is not dropped: one deferred wake-up
 * follows at its end, so every heartbeat is followed by one within WAKE_EVERY_MS even if it is the last
 * for a while. The job key keeps one pending run however many heartbeats arrive; `preserve_run_at`
 * keeps the time a pending pass has (a busy stream cannot postpone it forever, nor a wake-up pull a
 * thin stream's next pass forward).
 */
export function alertEvaluationWake(sql: Sql, clock: Clock): () => void {
  let lastWake = Number.NEGATIVE_INFINITY;
  let deferred = false;
  const wake = () => {
    const now = clock.now();
    const wait = lastWake + WAKE_EVERY_MS - now;
    if (wait > 0) {
      if (deferred) return;
      deferred = true;
      clock.setTimeout(() => {
        deferred = false;
        wake();
      }, wait);
      return;
    }
    lastWake = now;
    enqueueJob(
      sql,
      EVALUATE_TASK,
      {},
      {
        jobKey: EVALUATE_TASK,
        jobKeyMode: "preserve_run_at",
        delayMs: SETTLE_MS + 100,
        maxAttempts: 10,
      },
    ).catch(() => {
      lastWake = Number.NEGATIVE_INFINITY; // try again with the next heartbeat
    });
  };
  return wake;
}
