import { type DeviceSummary, deviceSummaries, silentApprovedDevices } from "../devices/summaries";
import type { Config } from "../platform/config";
import type { Sql } from "../platform/database";
import { pgDate } from "../platform/database";
import { DEFAULT_OFFLINE_ALERT_MINUTES, readConsoleSettings } from "../settings/store";
import { type FeedPosition, telemetryAfter } from "../telemetry/feed";
import type { TelemetryEvent } from "../telemetry/service";
import { openAlert, resolveOpen } from "./lifecycle";
import { type NotifyPolicy, notifyPolicy } from "./notifications/queue";
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
export const SETTLE_MS = 1500;
const BATCH = 2000;

/** A value at a dotted path of a payload (string keys only, as in the reference); undefined if absent. */
export function valueAt(payload: unknown, path: string): unknown {
  let node = payload;
  for (const key of path.split(".")) {
    if (node === null || typeof node !== "object" || Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function asText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Whether `value` meets the rule's condition. A numeric rule ignores values that are not numbers. */
export function conditionHolds(
  rule: Pick<AlertRule, "fieldType" | "operator" | "thresholdValue">,
  value: unknown,
) {
  if (value === undefined || value === null) return undefined;
  if (rule.fieldType === "number" || rule.fieldType === "integer") {
    const v = typeof value === "number" ? value : typeof value === "string" ? parseNumber(value) : undefined;
    const limit = parseNumber(rule.thresholdValue);
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
function recovered(rule: AlertRule, value: unknown): boolean {
  if (rule.clearThreshold === null) return true;
  const v = typeof value === "number" ? value : parseNumber(String(value));
  const clear = parseNumber(rule.clearThreshold)!;
  if (v === undefined) return true;
  return rule.operator.startsWith(">") ? v <= clear : v >= clear;
}

function appliesTo(rule: AlertRule, device: DeviceSummary): boolean {
  if (!device.approved) return false;
  if (rule.deviceIds && !rule.deviceIds.includes(device.id)) return false;
  return (device.schemaProduct ?? device.productName) === rule.productName;
}

type State = { breachSince: Date | null; clearSince: Date | null; evaluatedAt: Date };
type StateRow = {
  rule_id: number;
  device_id: string;
  breach_since: Date | null;
  clear_since: Date | null;
  evaluated_at: Date;
};

export function ruleMessage(rule: Pick<AlertRule, "conditionField" | "operator" | "thresholdValue">): string {
  return `Rule Breach: ${rule.conditionField} ${rule.operator} ${rule.thresholdValue}`;
}

/** Applies one event to one rule's state; opens or resolves the alert when the timing says so. */
async function step(
  tx: Sql,
  rule: AlertRule,
  event: TelemetryEvent,
  state: State | undefined,
  policy: NotifyPolicy,
) {
  const value = valueAt(event.payload, rule.conditionField);
  const holds = conditionHolds(rule, value);
  if (holds === undefined) return state; // no usable value: the state waits for one
  const t = event.recordedAt;
  const next: State = { breachSince: null, clearSince: null, evaluatedAt: t };
  if (holds) {
    next.breachSince = state?.breachSince ?? t;
    if (t.getTime() - next.breachSince.getTime() >= rule.forMinutes * 60_000) {
      await openAlert(
        tx,
        {
          type: "threshold",
          severity: rule.severity,
          message: ruleMessage(rule),
          deviceId: event.deviceId,
          ruleId: rule.id,
          value: asText(value).slice(0, 500),
          recipients: rule.recipients,
        },
        policy,
      );
    }
  } else if (recovered(rule, value)) {
    next.clearSince = state?.clearSince ?? t;
    if (
      rule.resolveAfterMinutes !== null &&
      t.getTime() - next.clearSince.getTime() >= rule.resolveAfterMinutes * 60_000
    ) {
      await resolveOpen(
        tx,
        { deviceId: event.deviceId, ruleId: rule.id, type: "threshold" },
        { how: "auto" },
        policy,
        rule.recipients,
      );
    }
  }
  return next;
}

export interface EvaluationResult {
  events: number;
  evaluations: number;
  /** More telemetry is waiting (the batch was full). */
  more: boolean;
}

/** One evaluation run (see above). `beforeCommit` lets tests kill the process mid-transaction. */
export async function evaluateAlerts(
  sql: Sql,
  config: Config,
  options: { beforeCommit?: () => Promise<void>; settleMs?: number } = {},
): Promise<EvaluationResult> {
  const policy = await notifyPolicy(config, sql);
  const rules = await enabledRules(sql);
  const until = new Date(Date.now() - (options.settleMs ?? SETTLE_MS));
  return (await sql.begin(async (txRaw) => {
    const tx = txRaw as unknown as Sql;
    await tx`insert into alert_evaluation_cursor (id, recorded_at, event_id)
      values (1, now() - interval '5 minutes', '00000000-0000-0000-0000-000000000000') on conflict do nothing`;
    const [cursor] = await tx<{ recorded_at: Date; event_id: string }[]>`
      select recorded_at, event_id from alert_evaluation_cursor where id = 1 for update`;
    const after: FeedPosition = { recordedAt: pgDate(cursor!.recorded_at), id: cursor!.event_id };
    const events = await telemetryAfter(tx, after, until, BATCH);
    let evaluations = 0;
    if (events.length > 0) {
      const devices = await deviceSummaries(tx, [...new Set(events.map((e) => e.deviceId))]);
      const states = new Map<string, State>();
      const ruleIds = rules.map((r) => r.id);
      const stateRows = await tx<StateRow[]>`select * from alert_rule_states
        where rule_id = any(${ruleIds}::int[]) and device_id = any(${[...devices.keys()]}::uuid[])`;
      for (const s of stateRows) {
        states.set(`${s.rule_id}:${s.device_id}`, {
          breachSince: pgDate(s.breach_since),
          clearSince: pgDate(s.clear_since),
          evaluatedAt: pgDate(s.evaluated_at),
        });
      }
      const changed = new Set<string>();
      for (const event of events) {
        const device = devices.get(event.deviceId);
        if (!device) continue;
        // A heartbeat ends the device's offline alert (reference message).
        await resolveOpen(
          tx,
          { deviceId: device.id, type: "offline" },
          { how: "heartbeat", message: "Device heartbeat resumed" },
          policy,
        );
        for (const rule of rules) {
          if (!appliesTo(rule, device)) continue;
          const key = `${rule.id}:${device.id}`;
          const state = states.get(key);
          if (state && state.evaluatedAt >= event.recordedAt) continue;
          evaluations++;
          const next = await step(tx, rule, event, state, policy);
          if (next && next !== state) {
            states.set(key, next);
            changed.add(key);
          }
        }
      }
      for (const key of changed) {
        const [ruleId, deviceId] = key.split(":") as [string, string];
        const s = states.get(key)!;
        await tx`insert into alert_rule_states (rule_id, device_id, breach_since, clear_since, evaluated_at)
          values (${Number(ruleId)}, ${deviceId}::uuid, ${s.breachSince?.toISOString() ?? null}::timestamptz,
            ${s.clearSince?.toISOString() ?? null}::timestamptz, ${s.evaluatedAt.toISOString()}::timestamptz)
          on conflict (rule_id, device_id) do update set breach_since = excluded.breach_since,
            clear_since = excluded.clear_since, evaluated_at = excluded.evaluated_at`;
      }
      const last = events[events.length - 1]!;
      await tx`update alert_evaluation_cursor set recorded_at = ${last.recordedAt.toISOString()}::timestamptz,
        event_id = ${last.id}::uuid where id = 1`;
    }
    await options.beforeCommit?.();
    return { events: events.length, evaluations, more: events.length === BATCH };
  })) as EvaluationResult;
}

/**
 * Offline alerts (reference §7.4): approved devices silent beyond Settings' offline window get one
 * open `offline` alert; devices seen again since their alert are resolved here too (the heartbeat
 * path resolves them through evaluation; this catches a device whose telemetry was not evaluated).
 */
export async function checkOfflineDevices(sql: Sql, config: Config): Promise<{ opened: number }> {
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
  return { opened };
}

let lastWake = 0;
const WAKE_EVERY_MS = 1000;

/**
 * Called by the heartbeat route after a heartbeat was stored: schedules an evaluation run at most
 * once a second per process, never awaited by the heartbeat (off its hot path). The job key keeps
 * one pending run however many heartbeats arrive; `preserve_run_at` keeps a busy stream from
 * postponing it forever.
 */
export function wakeAlertEvaluation(sql: Sql): void {
  const now = Date.now();
  if (now - lastWake < WAKE_EVERY_MS) return;
  lastWake = now;
  const runAt = new Date(now + SETTLE_MS + 200).toISOString();
  sql`select graphile_worker.add_job(${EVALUATE_TASK}, '{}'::json, job_key => ${EVALUATE_TASK},
      job_key_mode => 'preserve_run_at', run_at => ${runAt}::timestamptz, max_attempts => 10)`
    .execute()
    .catch(() => {
      lastWake = 0; // try again with the next heartbeat
    });
}
