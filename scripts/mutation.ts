#!/usr/bin/env bun
/**
 * `npm run test:mutation -- <group> [...]` (or `all`): StrykerJS puts small plausible bugs into the
 * security- and data-critical code, one at a time, and runs that code's own test files (the command
 * runner calling `bun test`) against each. A mutant the tests do not notice "survives". Slow (each
 * mutant is a test run), so it is not part of `npm test`; reports land in reports/mutation/<group>.html.
 * Groups, their code and their tests are listed below; docs/testing.md has the last scores.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(import.meta.dir, "..");

export const GROUPS: Record<string, { mutate: string[]; tests: string[] }> = {
  access: {
    mutate: ["modules/platform/access.ts", "ui/page.ts"],
    tests: [
      "tests/platform/access-table.test.ts",
      "tests/operators/auth.test.ts",
      "tests/platform/hardening.test.ts",
    ],
  },
  sessions: {
    mutate: ["modules/operators/service.ts"],
    tests: ["tests/operators/auth.test.ts", "tests/console/settings.test.ts"],
  },
  "device-identity": {
    mutate: ["modules/devices/registration.ts", "modules/devices/device-auth.ts"],
    tests: [
      "tests/devices/identity.test.ts",
      "tests/devices/registration.test.ts",
      "tests/devices/heartbeat.test.ts",
    ],
  },
  commands: {
    mutate: ["modules/commands/service.ts"],
    tests: ["tests/commands/commands.test.ts"],
  },
  "e2e-locks": {
    mutate: ["modules/e2e/locks.ts", "modules/e2e/create.ts", "modules/e2e/results.ts"],
    tests: ["tests/e2e/api.test.ts"],
  },
  "read-file": {
    mutate: ["agent/builtins/read-file.ts"],
    tests: ["tests/agent/read-file.test.ts", "tests/agent/sandbox.test.ts"],
  },
  "exec-cmd": {
    mutate: ["agent/builtins/exec-cmd.ts"],
    tests: ["tests/agent/sandbox.test.ts", "tests/agent/exec-identity.test.ts"],
  },
  retention: {
    mutate: ["modules/telemetry/service.ts", "modules/e2e/retention.ts", "modules/audit/service.ts"],
    tests: ["tests/telemetry/telemetry.test.ts", "tests/e2e/retention.test.ts", "tests/audit/audit.test.ts"],
  },
};

function usage(problem?: string): never {
  if (problem) console.error(`test:mutation: ${problem}`);
  console.error(`usage: npm run test:mutation -- <group ...|all>\ngroups: ${Object.keys(GROUPS).join(", ")}`);
  process.exit(problem ? 2 : 0);
}

const asked = process.argv.slice(2);
if (asked.length === 0 || asked.includes("--help")) usage(asked.length === 0 ? "name a group" : undefined);
const groups = asked.includes("all") ? Object.keys(GROUPS) : asked;
for (const group of groups) if (!GROUPS[group]) usage(`unknown group "${group}"`);

mkdirSync(path.join(ROOT, "reports/mutation"), { recursive: true });
let failed = false;
for (const group of groups) {
  const { mutate, tests } = GROUPS[group]!;
  const config = path.join(ROOT, `.stryker-${group}.conf.json`);
  writeFileSync(
    config,
    JSON.stringify({
      testRunner: "command",
      // `bun` from PATH: npm puts node_modules/.bin there, and Stryker runs this in a copy of the tree.
      commandRunner: { command: `bun test --timeout 60000 ${tests.join(" ")}` },
      mutate,
      coverageAnalysis: "off",
      concurrency: 1,
      timeoutMS: 120_000,
      reporters: ["progress", "clear-text", "html", "json"],
      htmlReporter: { fileName: `reports/mutation/${group}.html` },
      jsonReporter: { fileName: `reports/mutation/${group}.json` },
      tempDirName: `.stryker-tmp-${group}`,
      cleanTempDir: "always",
      // Anchored: only the top-level output folders (modules/reports is code).
      ignorePatterns: ["/artifacts", "/reports", "/dist", "/data", "/.cache"],
    }),
  );
  console.log(`test:mutation: ${group}: mutating ${mutate.join(", ")}; tests: ${tests.join(", ")}`);
  const run = spawnSync("node_modules/.bin/stryker", ["run", config], { cwd: ROOT, stdio: "inherit" });
  rmSync(config, { force: true });
  if (run.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
