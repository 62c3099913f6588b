import { describe, expect, test } from "bun:test";
import { collectEdges, layoutViolations } from "../../scripts/check-layout";

const violations = (from: string, to: string) => layoutViolations([{ from, to }]);

describe("check-layout: a feature's door", () => {
  test("another feature's service.ts, index.ts (no service) and model.ts are its door", () => {
    expect(violations("modules/alerts/evaluation.ts", "modules/settings/service.ts")).toEqual([]);
    expect(violations("modules/metrics/scrape.ts", "modules/e2e/index.ts")).toEqual([]);
    expect(violations("modules/reports/model.ts", "modules/jsonapi/model.ts")).toEqual([]);
  });

  test("any other file of another feature is behind the door", () => {
    const problems = violations("modules/alerts/evaluation.ts", "modules/settings/store.ts");
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain("modules/settings/service.ts (or index.ts) and model.ts");
    expect(violations("modules/alerts/pages/alert.tsx", "modules/devices/summaries.ts")).toHaveLength(1);
    expect(violations("modules/console/dashboard/page.tsx", "modules/live/hub.ts")).toHaveLength(1);
  });

  test("a feature's own files, modules/platform and foreign keys between tables are not doors", () => {
    expect(violations("modules/alerts/evaluation.ts", "modules/alerts/rules.ts")).toEqual([]);
    expect(violations("modules/alerts/evaluation.ts", "modules/platform/database.ts")).toEqual([]);
    expect(violations("modules/commands/schema.ts", "modules/devices/schema.ts")).toEqual([]);
    expect(violations("modules/commands/service.ts", "modules/devices/schema.ts")).toHaveLength(1);
  });

  test("job tasks and the CLI enter a feature through its door too (the E2E runner program aside)", () => {
    expect(violations("jobs/alerts-evaluate.ts", "modules/alerts/index.ts")).toEqual([]);
    expect(violations("jobs/alerts-evaluate.ts", "modules/jobs/service.ts")).toEqual([]);
    expect(violations("jobs/alerts-evaluate.ts", "modules/alerts/evaluation.ts")).toHaveLength(1);
    expect(violations("jobs/e2e-seed.ts", "modules/jobs/task.ts")).toHaveLength(1);
    expect(violations("cli/main.ts", "modules/operators/factors.ts")).toHaveLength(1);
    expect(violations("cli/e2e/commands.ts", "modules/e2e/runner/run.ts")).toEqual([]);
  });

  test("the composition roots mount routes but never reach pages or tables", () => {
    expect(violations("app.ts", "modules/alerts/routes.tsx")).toEqual([]);
    expect(violations("cli/backup.ts", "modules/backup/service.ts")).toEqual([]);
    expect(violations("app.ts", "modules/alerts/pages/alert.tsx")).toHaveLength(1);
    // Behind the door, and private to the feature besides.
    expect(violations("jobs/prune.ts", "modules/devices/routes.ts")).toHaveLength(2);
  });
});

describe("check-layout: the agent and the server share only shared/", () => {
  test("server code never imports the agent", () => {
    for (const from of [
      "app.ts",
      "cli/outpost.ts",
      "jobs/prune.ts",
      "modules/devices/rows.ts",
      "ui/table.tsx",
    ]) {
      const problems = violations(from, "agent/tunnel-work.ts");
      expect(
        problems.filter((problem) => problem.includes("server code never imports the agent")),
      ).toHaveLength(1);
    }
    expect(violations("modules/devices/rows.ts", "shared/secret-fingerprint.ts")).toEqual([]);
  });

  test("the agent imports only itself and shared/", () => {
    expect(violations("agent/poller.ts", "agent/backoff.ts")).toEqual([]);
    expect(violations("agent/poller.ts", "shared/scripts/validation.ts")).toEqual([]);
    expect(violations("agent/poller.ts", "modules/platform/errors.ts")).toHaveLength(1);
    expect(violations("agent/poller.ts", "ui/table.tsx")).toHaveLength(1);
  });

  test("shared/ imports only shared/", () => {
    expect(violations("shared/scripts/frontmatter.ts", "shared/scripts/errors.ts")).toEqual([]);
    expect(violations("shared/scripts/frontmatter.ts", "agent/logger.ts")).toHaveLength(1);
    expect(violations("shared/tunnel-work.ts", "modules/platform/errors.ts")).toHaveLength(1);
  });
});

test("this repository follows the layout, and the scan sees the agent and shared/", () => {
  const edges = collectEdges();
  expect(edges.some((edge) => edge.from.startsWith("agent/") && edge.to.startsWith("shared/"))).toBe(true);
  expect(edges.some((edge) => edge.from.startsWith("modules/") && edge.to.startsWith("shared/"))).toBe(true);
  expect(layoutViolations(edges)).toEqual([]);
});
