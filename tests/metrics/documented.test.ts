// The metrics docs/operations.md promises are the ones a real scrape exposes, both ways, and a fresh
// server exports every known label value of its counters at 0 (so `rate()` and alerts on a label that
// has not happened yet read 0, not "no data"). The real `./outpost start` process, scraped over HTTP.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { JOB_CATALOG } from "../../jobs";
import { COMMAND_EVENTS, HEARTBEAT_RESULTS } from "../../modules/platform/metrics";
import { createTestDatabase } from "../helpers/database";
import { REPO, startOutpostProcess } from "../helpers/process";

const TOKEN = "metrics-token-documented-0123456789";
const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-metrics-doc-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** The series names in the first column of docs/operations.md's metrics table. */
function documentedSeries(): string[] {
  const doc = readFileSync(path.join(REPO, "docs/operations.md"), "utf8");
  const section = doc.split("## Prometheus metrics")[1]!.split("\n### ")[0]!;
  const names = new Set<string>();
  for (const line of section.split("\n")) {
    if (!line.startsWith("| `outpost_")) continue;
    const firstCell = line.split("|")[1]!;
    for (const match of firstCell.matchAll(/`(outpost_[a-z0-9_]+)/g)) names.add(match[1]!);
  }
  return [...names].sort();
}

test("every documented series is scraped, every scraped series documented; counters start at 0 for every label", async () => {
  const database = await createTestDatabase();
  const outpost = await startOutpostProcess(
    { DATA_DIR: dataDir, DATABASE_URL: database.url, METRICS_TOKEN: TOKEN, LOG_LEVEL: "warn" },
    90_000,
    false,
  );
  let text: string;
  try {
    const response = await fetch(`${outpost.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
    text = await response.text();
  } finally {
    expect(await outpost.interrupt()).toBe(0);
  }
  // Prometheus's own linter over the real scrape (names, units, HELP, TYPE, histogram buckets): silent.
  const lint = Bun.spawnSync(["promtool", "check", "metrics"], { stdin: new TextEncoder().encode(text) });
  expect({ exit: lint.exitCode, problems: `${lint.stdout}${lint.stderr}`.trim() }).toEqual({
    exit: 0,
    problems: "",
  });

  const scraped = [...text.matchAll(/^# TYPE (\S+) \S+$/gm)].map((m) => m[1]!).sort();
  expect(scraped.length).toBeGreaterThan(10);
  const documented = documentedSeries();
  expect({ undocumented: scraped.filter((name) => !documented.includes(name)) }).toEqual({
    undocumented: [],
  });
  expect({ notScraped: documented.filter((name) => !scraped.includes(name)) }).toEqual({ notScraped: [] });

  // Nothing happened yet in this process: every known label value is there, at exactly 0.
  const samples = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const cut = line.lastIndexOf(" ");
    // (The process-wide `service` label, wherever prom-client puts it, is left out of the key.)
    samples.set(
      line
        .slice(0, cut)
        .replace(/,?service="outpost",?/, "")
        .replace("{}", ""),
      line.slice(cut + 1),
    );
  }
  const sample = (series: string) => samples.get(series);
  for (const event of COMMAND_EVENTS)
    expect({ event, value: sample(`outpost_commands_total{event="${event}"}`) }).toEqual({
      event,
      value: "0",
    });
  for (const result of HEARTBEAT_RESULTS)
    expect({
      result,
      value: sample(`outpost_heartbeats_total{result="${result}"}`),
    }).toEqual({
      result,
      value: "0",
    });
  // Every task of the worker, both outcomes (a scheduled task may have run since the start: present, ≥ 0).
  for (const { identifier } of JOB_CATALOG.jobs)
    for (const status of ["succeeded", "failed"])
      expect({
        identifier,
        status,
        present:
          sample(`outpost_job_duration_seconds_count{task="${identifier}",status="${status}"}`) !== undefined,
      }).toEqual({ identifier, status, present: true });
  // E2E runs by every status (scrape-time gauge), 0 on an empty database.
  for (const status of ["queued", "running", "passed", "failed", "cancelled", "blocked"])
    expect({ status, value: sample(`outpost_e2e_runs{status="${status}"}`) }).toEqual({
      status,
      value: "0",
    });
}, 180_000);
