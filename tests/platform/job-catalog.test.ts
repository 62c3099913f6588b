// The job catalog hands graphile-worker its tasks by identifier: a schedule naming no task never runs.
import { expect, test } from "bun:test";
import { JOB_CATALOG } from "../../jobs";

test("every schedule names a job of the catalog, and every identifier is used by one job only", () => {
  const identifiers = JOB_CATALOG.jobs.map((job) => job.identifier);
  expect(new Set(identifiers).size).toBe(identifiers.length);
  for (const identifier of identifiers) expect(identifier).toMatch(/^[a-z][a-z0-9_]+$/);
  for (const schedule of JOB_CATALOG.schedules) expect(identifiers).toContain(schedule.task);
  // The retention and rollup jobs run on their schedule.
  for (const task of [
    "telemetry_rollup",
    "device_sightings_prune",
    "telemetry_schemas_prune",
    "telemetry_retention",
    "command_retention",
    "e2e_retention",
    "alerts_retention",
    "audit_retention",
  ])
    expect(JOB_CATALOG.schedules.map((s) => s.task)).toContain(task);
});
