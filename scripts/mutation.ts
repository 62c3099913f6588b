#!/usr/bin/env bun
/**
 * `npm run test:mutation -- <group> [...]` (or `all`): StrykerJS puts small plausible bugs into the
 * security- and data-critical code, one at a time, and runs that code's own test files (the command
 * runner calling `bun test`) against each. A mutant the tests do not notice "survives". Slow (each
 * mutant is a test run), so it is not part of `npm test` or CI; reports land in
 * reports/mutation/<group>.html, survivors in reports/mutation/<group>-survivors.txt.
 *
 * Fast enough to run because: each group runs only its own test files, with `--bail` (a killed mutant
 * stops at its first failing test); one PostgreSQL serves every run of the group (TEST_DATABASE_URL)
 * instead of one started per mutant; log calls and error message texts are not mutated
 * (scripts/mutation-ignore.mjs); `file#declaration` entries mutate only those declarations
 * (scripts/mutation-ranges.ts).
 * Groups, their code and their tests are listed in scripts/mutation-groups.ts; docs/testing.md has the
 * last scores.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startEmbeddedPostgres } from "../modules/platform/embedded-postgres";

const ROOT = path.resolve(import.meta.dir, "..");

import { GROUPS } from "./mutation-groups";
import { resolveMutateEntry } from "./mutation-ranges";

function usage(problem?: string): never {
  if (problem) console.error(`test:mutation: ${problem}`);
  console.error(`usage: npm run test:mutation -- <group ...|all>\ngroups: ${Object.keys(GROUPS).join(", ")}`);
  process.exit(problem ? 2 : 0);
}

interface ReportMutant {
  status: string;
  mutatorName: string;
  replacement?: string;
  location: { start: { line: number; column: number } };
}

/** Score as Stryker counts it (killed + timeout over every mutant that ran), and the survivors. */
function summarise(report: string): { score: number; counts: Record<string, number>; survivors: string[] } {
  const json = JSON.parse(readFileSync(report, "utf8")) as {
    files: Record<string, { mutants: ReportMutant[] }>;
  };
  const counts: Record<string, number> = {};
  const survivors: string[] = [];
  for (const [file, { mutants }] of Object.entries(json.files)) {
    for (const m of mutants) {
      counts[m.status] = (counts[m.status] ?? 0) + 1;
      if (m.status === "Survived" || m.status === "NoCoverage") {
        const replacement = (m.replacement ?? "").replace(/\s+/g, " ").slice(0, 100);
        survivors.push(
          `${file}:${m.location.start.line}:${m.location.start.column} ${m.mutatorName} ${replacement}`,
        );
      }
    }
  }
  const detected = (counts.Killed ?? 0) + (counts.Timeout ?? 0);
  const valid = detected + (counts.Survived ?? 0) + (counts.NoCoverage ?? 0);
  return { score: valid ? (100 * detected) / valid : 100, counts, survivors };
}

const asked = process.argv.slice(2);
if (asked.length === 0 || asked.includes("--help")) usage(asked.length === 0 ? "name a group" : undefined);
const groups = asked.includes("all") ? Object.keys(GROUPS) : asked;
for (const group of groups) if (!GROUPS[group]) usage(`unknown group "${group}"`);

const reports = path.join(ROOT, "reports/mutation");
mkdirSync(reports, { recursive: true });

// One PostgreSQL for every test run of every group (tests/helpers/cluster.ts reuses TEST_DATABASE_URL).
let stopPostgres = async () => {};
const env = { ...process.env };
if (!env.TEST_DATABASE_URL) {
  const directory = mkdtempSync(path.join(tmpdir(), "outpost-mutation-pg-"));
  chmodSync(directory, 0o700);
  const cluster = await startEmbeddedPostgres({ directory, ephemeral: true });
  env.TEST_DATABASE_URL = cluster.url;
  stopPostgres = async () => {
    await cluster.stop();
    for (const suffix of ["", ".password", ".log", ".owner"])
      rmSync(`${directory}${suffix}`, { recursive: true, force: true });
  };
}

let failed = false;
const lines: string[] = [];
try {
  for (const group of groups) {
    const { tests } = GROUPS[group]!;
    const mutate = GROUPS[group]!.mutate.flatMap((entry) => resolveMutateEntry(entry, ROOT));
    const config = path.join(ROOT, `.stryker-${group}.conf.json`);
    const json = path.join(reports, `${group}.json`);
    rmSync(json, { force: true });
    writeFileSync(
      config,
      JSON.stringify({
        testRunner: "command",
        // Stryker links node_modules into its sandbox only when it is a directory: a checkout whose
        // node_modules is itself a link gets one here (the app reads assets from node_modules).
        commandRunner: {
          command: `{ [ -e node_modules ] || ln -s ${ROOT}/node_modules node_modules; } && node_modules/.bin/bun test --timeout 60000 --bail ${tests.join(" ")}`,
        },
        plugins: ["@stryker-mutator/*", "./scripts/mutation-ignore.mjs"],
        ignorers: ["outpost-messages"],
        mutate,
        coverageAnalysis: "off",
        concurrency: 1,
        // Per mutant: the dry run's time × 1.5 + this; an endless loop costs no more.
        timeoutMS: 15_000,
        reporters: [process.stdout.isTTY ? "progress" : "progress-append-only", "html", "json"],
        htmlReporter: { fileName: `reports/mutation/${group}.html` },
        jsonReporter: { fileName: `reports/mutation/${group}.json` },
        tempDirName: `.stryker-tmp-${group}`,
        cleanTempDir: "always",
        // Anchored: "reports" alone would also drop modules/reports.
        ignorePatterns: ["/artifacts", "/reports", "/dist", "/data", "/.cache", "/.stryker-tmp*"],
      }),
    );
    const started = Date.now();
    console.log(`test:mutation: ${group}: mutating ${mutate.join(", ")}\n  tests: ${tests.join(", ")}`);
    const run = spawnSync("node_modules/.bin/stryker", ["run", config], { cwd: ROOT, stdio: "inherit", env });
    rmSync(config, { force: true });
    const minutes = ((Date.now() - started) / 60_000).toFixed(1);
    if (run.status !== 0 || !existsSync(json)) {
      failed = true;
      lines.push(`${group}: stryker failed (exit ${run.status}) after ${minutes} min`);
      continue;
    }
    const { score, counts, survivors } = summarise(json);
    writeFileSync(path.join(reports, `${group}-survivors.txt`), survivors.map((s) => `${s}\n`).join(""));
    const line = `${group}: ${score.toFixed(1)} % (${Object.entries(counts)
      .map(([status, n]) => `${n} ${status.toLowerCase()}`)
      .join(", ")}) in ${minutes} min`;
    lines.push(line);
    console.log(`test:mutation: ${line}; survivors in reports/mutation/${group}-survivors.txt`);
  }
} finally {
  await stopPostgres();
}
console.log(`\ntest:mutation summary (${new Date().toISOString().slice(0, 10)})\n${lines.join("\n")}`);
process.exit(failed ? 1 : 0);
