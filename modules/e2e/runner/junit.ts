import { mkdirSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";

/**
 * The run as JUnit XML (the shape of Jenkins' junit-10.xsd, which GitLab, GitHub test reporters and
 * most CI dashboards read): one <testsuite> per run, one <testcase> per journey.
 */

export interface JUnitJourney {
  journey_id: string;
  status: string;
  failure_step: string | null;
  failure_reason: string | null;
  duration_ms: number | null;
  /** The journey's e2e_log.v1 content (or a note why there is none). */
  log: string | null;
}

export interface JUnitRun {
  run_id: string;
  suite_id: string;
  environment_label: string;
  status: string;
  started_at: string | null;
  console_url: string;
  journeys: JUnitJourney[];
  /** Why the run could not be created or followed to its end (an <error> testcase). */
  error?: string;
}

/** Characters XML 1.0 forbids (most C0 controls, lone surrogates, U+FFFE/FFFF) become U+FFFD. */
const FORBIDDEN = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

export function xmlText(value: string): string {
  return value
    .replace(FORBIDDEN, "\uFFFD")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;");
}

/** Attribute values also escape quotes and keep line breaks and tabs as character references. */
function attr(value: string | number): string {
  return xmlText(String(value))
    .replace(/"/g, "&quot;")
    .replace(/\n/g, "&#10;")
    .replace(/\r/g, "&#13;")
    .replace(/\t/g, "&#9;");
}

function attrs(values: Record<string, string | number | undefined>): string {
  return Object.entries(values)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => ` ${k}="${attr(v!)}"`)
    .join("");
}

const seconds = (ms: number | null) => ((ms ?? 0) / 1000).toFixed(3);
/** junit-10.xsd's timestamp has no zone; it is UTC. */
const timestamp = (iso: string | null) => (iso ?? new Date().toISOString()).slice(0, 19);

const SKIPPED = new Set(["skipped", "cancelled", "blocked", "queued", "running"]);
const EXCERPT_BYTES = 64 * 1024;

/** A log rendered one line per row (e2e_log.v1 rows summarised, anything else kept), tail-capped. */
export function logExcerpt(content: string): string {
  const lines = content
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      let row: any;
      try {
        row = JSON.parse(line);
      } catch {
        return line;
      }
      if (row?.schema !== "e2e_log.v1") return line;
      if (row.level === "journey")
        return `${row.timestamp} journey ${row.event} ${row.status}${row.failure_step ? ` at ${row.failure_step}` : ""}${row.duration_ms !== undefined ? ` (${row.duration_ms} ms)` : ""}`;
      const http = row.http_status === undefined ? "" : ` HTTP ${row.http_status}`;
      const error = row.error_message ? ` — ${row.error_code ?? "error"}: ${row.error_message}` : "";
      return `${row.timestamp} step ${row.step_id ?? row.action} ${row.status} (${row.action} → ${row.expect}, ${row.duration_ms} ms${http})${error}`;
    });
  const text = lines.join("\n");
  if (Buffer.byteLength(text) <= EXCERPT_BYTES) return text;
  const tail = Buffer.from(text).subarray(-EXCERPT_BYTES).toString("utf8");
  return `[… earlier lines omitted]\n${tail.slice(tail.indexOf("\n") + 1)}`;
}

function testcase(run: JUnitRun, journey: JUnitJourney): string {
  const head = `    <testcase${attrs({
    name: journey.journey_id,
    classname: `e2e.${run.suite_id}`,
    time: seconds(journey.duration_ms),
  })}>`;
  const body: string[] = [];
  if (SKIPPED.has(journey.status))
    body.push(
      `      <skipped${attrs({ message: `${journey.status}${journey.failure_reason ? `: ${journey.failure_reason}` : ""}` })}/>`,
    );
  if (journey.status === "failed") {
    const step = journey.failure_step ?? "unknown step";
    const reason = journey.failure_reason ?? "no reason given";
    body.push(
      `      <failure${attrs({ message: `${step}: ${reason}`, type: step })}>${xmlText(
        `Journey ${journey.journey_id} failed at step ${step}: ${reason}\nRun: ${run.console_url}&journey=${journey.journey_id}`,
      )}</failure>`,
    );
  }
  if (journey.log) body.push(`      <system-out>${xmlText(logExcerpt(journey.log))}</system-out>`);
  return [head, ...body, "    </testcase>"].join("\n");
}

export function junitXml(run: JUnitRun): string {
  const count = (predicate: (j: JUnitJourney) => boolean) => run.journeys.filter(predicate).length;
  const tests = run.journeys.length + (run.error ? 1 : 0);
  const failures = count((j) => j.status === "failed");
  const errors = run.error ? 1 : 0;
  const skipped = count((j) => SKIPPED.has(j.status));
  const time = seconds(run.journeys.reduce((sum, j) => sum + (j.duration_ms ?? 0), 0));
  const name = `${run.suite_id} (${run.environment_label})`;
  const totals = { tests, failures, errors, time };
  const error = run.error
    ? [
        `    <testcase${attrs({ name: "run", classname: `e2e.${run.suite_id}`, time: "0.000" })}>`,
        `      <error${attrs({ message: run.error, type: "runner" })}>${xmlText(run.error)}</error>`,
        "    </testcase>",
      ].join("\n")
    : undefined;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites${attrs({ name: "outpost-e2e", ...totals })}>`,
    `  <testsuite${attrs({ name, ...totals, skipped, timestamp: timestamp(run.started_at), hostname: hostname(), id: run.run_id || undefined, package: `e2e.${run.suite_id}` })}>`,
    "    <properties>",
    ...Object.entries({
      run_id: run.run_id,
      run_status: run.status,
      suite_id: run.suite_id,
      environment_label: run.environment_label,
      console_url: run.console_url,
    })
      .filter(([, value]) => value)
      .map(([key, value]) => `      <property${attrs({ name: key, value })}/>`),
    "    </properties>",
    ...(error ? [error] : []),
    ...run.journeys.map((journey) => testcase(run, journey)),
    "  </testsuite>",
    "</testsuites>",
    "",
  ].join("\n");
}

export function writeJUnit(file: string, run: JUnitRun): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, junitXml(run));
}
