#!/usr/bin/env bun
/**
 * `npm test [-- <files or bun test options>]`: the whole suite, test files spread over worker
 * processes (`bun test --parallel`), slowest files first (tests/timings.json).
 *
 * Why a wrapper: with `--parallel`, a preload's afterAll runs after every file and a worker's exit
 * handlers never run, so the workers cannot own PostgreSQL. This process starts the one cluster and its
 * migrated template (tests/helpers/cluster.ts), hands its URL to the workers (the preload then starts
 * nothing), and stops it when the run ends, however it ends.
 *
 * OUTPOST_TEST_WORKERS: worker processes (default: the machine's cores, at most 4; 1 runs the files
 * one after another in one process, as plain `bun test` does).
 * `npm test -- --update-timings` rewrites tests/timings.json from the run.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { availableParallelism } from "node:os";
import path from "node:path";
import { stripVTControlCharacters } from "node:util";
import { startTestCluster } from "../tests/helpers/cluster";

const ROOT = path.resolve(import.meta.dir, "..");
const TIMINGS = "tests/timings.json";

function workerCount(): number {
  const raw = process.env.OUTPOST_TEST_WORKERS;
  if (raw === undefined || raw === "") return Math.min(availableParallelism(), 4);
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 64) {
    console.error(
      `npm test: OUTPOST_TEST_WORKERS must be a whole number from 1 to 64, not ${JSON.stringify(raw)}`,
    );
    process.exit(2);
  }
  return n;
}

const workers = workerCount();
let child: ChildProcess | undefined;
/** The exit code of the first signal received: the run ends after the step it interrupted. */
let interrupted: number | undefined;
const starting = startTestCluster();
// A signal while the cluster starts stops it once it is up (killing it mid-start would leave the
// postmaster running); once the tests run, the signal is passed on and they end the run.
for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
  ["SIGHUP", 129],
] as const) {
  process.on(signal, () => {
    interrupted ??= code;
    if (child) child.kill(signal);
    else void starting.then((started) => started.stop()).finally(() => process.exit(code));
  });
}
const cluster = await starting;
const args = process.argv.slice(2);
/**
 * Files that run alone, after the others: the Debian package test installs /etc/outpost/agent.yaml,
 * which every agent started without --config reads; the system journeys (`npm run test:system`) start
 * a whole deployment (four Outpost processes, Caddy, sshd, three agents, Chromium) and hold its
 * journeys to seconds, which they cannot while the other files load both cores.
 */
const ALONE = ["tests/agent/deb-package.test.ts", "tests/system/journeys.test.ts"];
const wholeSuite = !args.some(
  (arg) => arg.startsWith("tests") || arg.startsWith("./") || arg.endsWith(".ts"),
);
const env = { ...process.env, OUTPOST_TEST_CLUSTER_URL: cluster.url };

/** Each test file's output but its passing tests' lines, and the files with a failed test. */
const outputOf = new Map<string, string[]>();
const failedFiles = new Set<string>();

/**
 * Passes bun's output on as it comes and keeps what each file printed, to print the failed files' again
 * at the end: a run's log is often read from its tail (CI), where bun names a failed test but not why.
 * With --parallel, a file's error can come in a later block of that file than its `(fail)` line.
 */
function keepFileOutput(stream: NodeJS.ReadableStream, out: NodeJS.WritableStream) {
  let partial = "";
  let file = "";
  stream.on("data", (chunk: Buffer) => {
    out.write(chunk);
    const lines = (partial + chunk.toString("utf8")).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      const plain = stripVTControlCharacters(line);
      const header = /^(\S+\.test\.tsx?):$/.exec(plain);
      if (header) file = header[1]!;
      // bun's closing counts and its list of failed names (without their output) belong to no file.
      else if (
        /^\s*\d+ (pass|fail|skip|todo|expect\(\) calls)$|^Ran \d+ tests? |^\d+ tests? failed:$/.test(plain)
      )
        file = "";
      else if (file && !/^\s*\((pass|skip|todo)\)/.test(plain) && plain.trim() !== "") {
        if (/^\s*\(fail\)/.test(plain)) failedFiles.add(file);
        const kept = outputOf.get(file) ?? [];
        if (kept.length < 20_000) kept.push(line);
        outputOf.set(file, kept);
      }
    }
  });
}

function bunTest(testArgs: string[]): Promise<number> {
  child = spawn(path.join(ROOT, "node_modules/.bin/bun"), ["test", "--timeout", "60000", ...testArgs], {
    cwd: ROOT,
    stdio: ["inherit", "pipe", "pipe"],
    env,
  });
  keepFileOutput(child.stdout!, process.stdout);
  keepFileOutput(child.stderr!, process.stderr);
  const running = child;
  return new Promise((resolve) => running.once("close", (status) => resolve(status ?? 1)));
}

const parallel = workers > 1 ? [`--parallel=${workers}`, "--no-isolate", `--timings=${TIMINGS}`] : [];
let code = await bunTest([
  ...parallel,
  ...(wholeSuite && workers > 1 ? ALONE.map((file) => `--path-ignore-patterns=${file}`) : []),
  ...args,
]);
// With a name filter, bun fails a file run whose tests all miss it: the lone files are left out then.
const nameFilter = args.some((arg) => arg === "-t" || arg.startsWith("--test-name-pattern"));
if (wholeSuite && workers > 1 && !nameFilter && interrupted === undefined) {
  console.log(`\nnpm test: now the files that run alone: ${ALONE.join(", ")}`);
  const alone = await bunTest([...args.filter((arg) => arg !== "--update-timings"), ...ALONE]);
  code ||= alone;
}
await cluster.stop();
if (failedFiles.size > 0) {
  console.error(
    `\nnpm test: what the ${failedFiles.size} file(s) with a failed test printed (passes left out):`,
  );
  for (const file of failedFiles) {
    const kept = outputOf.get(file)!;
    const cut = kept.length > 300 ? [`(the first ${kept.length - 300} lines left out)`] : [];
    console.error(`\n${file}:\n${[...cut, ...kept.slice(-300)].join("\n")}`);
  }
}
process.exit(interrupted ?? code);
