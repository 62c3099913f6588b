/**
 * E2E runs page benchmark: server time of /e2e (runs table, flaky-journey card, run detail with
 * journey health, one journey's history) and /api/json/e2e_journey_health with a large history.
 *
 *   npm run bench:e2e-page -- [--runs 100000] [--results 1000000] [--samples 60]
 *
 * Seeds with set-based SQL (generate_series) an embedded PostgreSQL in a temp dir (or DATABASE_URL):
 * runs spread over 5 suites × 4 environments and 100 days, a commit per 40 runs in the metadata,
 * results/runs journeys per run (mostly passed; some journeys fail now and then). Starts the web
 * role on it, signs in as a viewer and times each page from request to the last byte over loopback:
 * p50 / p95 / max after 5 warm-up requests. Target: p95 < 50 ms.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { startOutpost } from "../../app";
import { createOperator, createSession } from "../../modules/operators/service";
import { SESSION_COOKIE } from "../../modules/platform/access";
import { loadConfig } from "../../modules/platform/config";
import { connectDatabase } from "../../modules/platform/database";
import { startEmbeddedPostgres } from "../../modules/platform/embedded-postgres";
import { createLogger } from "../../modules/platform/logger";

const args = process.argv.slice(2);
const arg = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const RUNS = Math.max(100, Math.min(1_000_000, arg("--runs", 100_000)));
const RESULTS = Math.max(RUNS, Math.min(10_000_000, arg("--results", 1_000_000)));
const SAMPLES = Math.max(5, Math.min(1000, arg("--samples", 60)));
const PER_RUN = Math.max(1, Math.round(RESULTS / RUNS));
const SUITES = 5;
const ENVIRONMENTS = 4;
const journeys = Array.from({ length: PER_RUN }, (_, i) => `j${i}`);

const dir = mkdtempSync(path.join(tmpdir(), "outpost-bench-e2e-page-"));
mkdirSync(path.join(dir, "journeys"));
for (const j of journeys)
  writeFileSync(
    path.join(dir, "journeys", `${j}.yaml`),
    `id: ${j}\ndescription: Journey ${j}\nsteps:\n  - action: fetch_dashboard\n    expect: dashboard_payload\n`,
  );
const suiteIds = Array.from({ length: SUITES }, (_, i) => `suite${i}`);
const environments = Array.from({ length: ENVIRONMENTS }, (_, i) => `env${i}`);
writeFileSync(
  path.join(dir, "config.yaml"),
  `allowed_environments: [${environments.join(", ")}]
suites:
${suiteIds.map((s) => `  ${s}: [${journeys.join(", ")}]`).join("\n")}
runners:
  bench: bench-runner-token-0123456789abcdefghijkl
`,
);

const embedded = process.env.DATABASE_URL
  ? undefined
  : await startEmbeddedPostgres({ directory: path.join(dir, "pg") });
const databaseUrl = process.env.DATABASE_URL ?? embedded!.url;
const config = loadConfig({
  DATABASE_URL: databaseUrl,
  DATA_DIR: dir,
  PORT: "0",
  HOST: "127.0.0.1",
  OUTPOST_ROLE: "web",
  LOG_LEVEL: "warn",
  SECRET_KEY: "bench-secret-key-bench-secret-key-0123456789",
  E2E_ENABLED: "true",
  E2E_CONFIG: path.join(dir, "config.yaml"),
});
const app = await startOutpost(config, createLogger("warn"), { announceSetupCode: () => {} });
const database = connectDatabase(databaseUrl, 4);
const sql = database.sql;

async function time<T>(label: string, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const value = await run();
  console.log(`  ${label}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return value;
}

try {
  console.log(
    `seeding ${RUNS.toLocaleString("en-US")} runs and ${(RUNS * PER_RUN).toLocaleString("en-US")} results (${PER_RUN} journeys a run)`,
  );
  await sql`truncate e2e_runs cascade`;
  await time("runs", () =>
    sql.unsafe(
      `insert into e2e_runs (suite_id, journey_ids, environment_label, trigger_source, protocol_version,
         runner_id, status, metadata, started_at, finished_at)
       select 'suite' || (g % ${SUITES}), $1::text[], 'env' || ((g / ${SUITES}) % ${ENVIRONMENTS}), 'ci', '1', 'bench',
         case when g % 13 = 0 then 'failed' when g % 97 = 0 then 'cancelled' else 'passed' end,
         jsonb_build_object('commit', md5((g / 40)::text), 'branch', 'main'),
         now() - make_interval(secs => g * (8640000.0 / ${RUNS})),
         now() - make_interval(secs => g * (8640000.0 / ${RUNS})) + interval '3 minutes'
       from generate_series(1, ${RUNS}) g`,
      [journeys],
    ),
  );
  await time("results", () =>
    sql.unsafe(
      `insert into e2e_run_results (run_id, journey_id, position, status, failure_step, failure_reason,
         started_at, finished_at, duration_ms)
       select r.id, 'j' || p, p,
         case when r.status = 'cancelled' then 'cancelled'
              when r.status = 'failed' and p = (hashtext(r.id::text) & 7) % ${PER_RUN} then 'failed'
              else 'passed' end,
         null, null, r.started_at, r.finished_at, 200 + (hashtext(r.id::text || p) & 4095)
       from e2e_runs r cross join generate_series(0, ${PER_RUN - 1}) p`,
    ),
  );
  await time("vacuum analyze", () => sql`vacuum analyze e2e_runs, e2e_run_results`);
  await sql`checkpoint`.catch(() => {});

  const viewer = await createOperator(database.db, {
    email: `bench-${Date.now()}@example.test`,
    password: "bench password 1",
    role: "viewer",
  });
  const token = await createSession(database.db, { operatorId: viewer.id, ttlHours: 2 });
  const headers = { cookie: `${SESSION_COOKIE}=${token}` };
  const [latest] = await sql<
    { id: string }[]
  >`select id::text as id from e2e_runs order by started_at desc limit 1`;
  const [deep] = await sql<{ id: string }[]>`
    select id::text as id from e2e_runs order by started_at desc offset ${Math.floor(RUNS * 0.9)} limit 1`;

  // --explain: the two queries behind the page, timed in-process (no HTTP, no rendering).
  if (args.includes("--explain")) {
    const { JourneyHealthCache } = await import("../../modules/e2e/health");
    const { systemClock } = await import("../../shared/clock");
    const journeyHealth = new JourneyHealthCache(database, systemClock);
    const { listRunsPage } = await import("../../modules/e2e/queries");
    const pairs = suiteIds.flatMap((suite_id) =>
      environments.map((environment_label) => ({ suite_id, environment_label })),
    );
    for (let i = 0; i < 5; i++) {
      let started = performance.now();
      const health = await journeyHealth.get(pairs);
      const healthMs = performance.now() - started;
      started = performance.now();
      await listRunsPage(database, { sort: "started_at", dir: "desc", page: 1, perPage: 25 });
      console.log(
        `journeyHealth(20 pairs): ${healthMs.toFixed(1)} ms (${health.length} journeys); listRunsPage: ${(performance.now() - started).toFixed(1)} ms`,
      );
    }
  }

  const pages: [string, string][] = [
    ["/e2e (first page, flaky card)", "/e2e"],
    ["/e2e filtered (suite, environment)", "/e2e?suite=suite1&environment=env2"],
    ["/e2e filtered (status failed)", "/e2e?status=failed"],
    ["/e2e?run= (detail, pass rates, sparklines)", `/e2e?run=${latest!.id}`],
    ["/e2e?run=&history= (journey history)", `/e2e?run=${latest!.id}&history=j3`],
    ["/e2e?run= of an old run", `/e2e?run=${deep!.id}`],
    ["/e2e 5 s refresh (fragment=runs)", "/e2e?fragment=runs"],
    ["/e2e page 100 (offset 2475)", "/e2e?page=100"],
    ["/api/json/e2e_journey_health (20 pairs)", "/api/json/e2e_journey_health"],
    ["reference: /alerts (another console page, no alerts)", "/alerts"],
  ];
  console.log(`\nserver time over loopback, ${SAMPLES} requests each after 5 warm-up requests (ms)`);
  console.log(`${"page".padEnd(46)} ${"p50".padStart(7)} ${"p95".padStart(7)} ${"max".padStart(7)}`);
  for (const [label, url] of pages) {
    const times: number[] = [];
    for (let i = 0; i < SAMPLES + 5; i++) {
      const started = performance.now();
      const response = await fetch(`${app.url}${url}`, { headers, redirect: "manual" });
      const body = await response.text();
      if (response.status !== 200)
        throw new Error(`${url} answered ${response.status}: ${body.slice(0, 200)}`);
      if (i >= 5) times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    const pct = (p: number) => times[Math.min(times.length - 1, Math.ceil((p / 100) * times.length) - 1)]!;
    const p95 = pct(95);
    console.log(
      `${label.padEnd(46)} ${pct(50).toFixed(1).padStart(7)} ${p95.toFixed(1).padStart(7)} ${times.at(-1)!.toFixed(1).padStart(7)}${p95 < 50 ? "" : "  ← over 50 ms"}`,
    );
  }
  console.log(
    `load average (1, 5, 15 min): ${loadavg()
      .map((l) => l.toFixed(2))
      .join(", ")}`,
  );
} finally {
  await database.close();
  await app.stop();
  await embedded?.stop();
  rmSync(dir, { recursive: true, force: true });
}
