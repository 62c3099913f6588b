/**
 * Rollout benchmark (`npm run bench:rollout`; issue 45, docs/scaling.md _Rollouts_).
 *
 *   npm run bench:rollout -- --devices 100000 --concurrency 5000 --canary 0 --callers 32 --max-seconds 1800
 *
 * Its own PostgreSQL and one Outpost (role `all`: HTTP and the job worker whose `rollout_drive` job
 * drives the rollout), the heartbeat bench's seeded fleet of `--devices` approved devices, then a
 * script-install rollout to all of them (`POST /api/v1/rollouts`, target `product:atom`, as an
 * operator's API token). The simulated fleet (bench/rollouts/fleet.ts) polls, claims the commands from
 * its heartbeat replies, runs them with the agent's executor and posts the agent's results. While it
 * runs, an operator's session GETs the progress page and its live fragment in turn. It prints:
 *   - time to queue: create → all waves planned (the API's answer), and → the first wave's first
 *     `concurrency` commands queued;
 *   - delivery rate: commands delivered per second and results per second (first to last);
 *   - time to finish: create → the rollout completed;
 *   - the progress page's and its fragment's p50 / p95 while it ran.
 * It stops by itself once the rollout finished, or after `--max-seconds` (then says how far it got);
 * `--canary N` (0: one wave), `--concurrency K` (devices in flight), `--callers C` (simulated
 * connections), `--threshold P` (failure threshold %).
 */
import { createApiToken } from "../../modules/operators/api-tokens";
import { createOperator, createSession } from "../../modules/operators/service";
import { SESSION_COOKIE } from "../../modules/platform/access";
import { heartbeatBodyText } from "../heartbeat/body";
import { startMigratedBenchDatabase } from "../heartbeat/database";
import { knob } from "../heartbeat/flags";
import { percentile } from "../heartbeat/probes";
import { seedFleet } from "../heartbeat/seed";
import { startBenchServer } from "../heartbeat/server";
import { benchLifecycle } from "../lifecycle";
import { AnsweringFleet } from "./fleet";

const BENCH = "bench:rollout";
const DEVICES = Math.max(1, Math.floor(knob(BENCH, "devices", "BENCH_DEVICES", 100_000)));
const CANARY = Math.floor(knob(BENCH, "canary", "BENCH_CANARY", 0));
const CONCURRENCY = Math.max(1, Math.floor(knob(BENCH, "concurrency", "BENCH_CONCURRENCY", 5000)));
const CALLERS = Math.max(1, Math.floor(knob(BENCH, "callers", "BENCH_CALLERS", 32)));
const THRESHOLD = Math.floor(knob(BENCH, "threshold", "BENCH_THRESHOLD", 10));
const MAX_SECONDS = knob(BENCH, "max-seconds", "BENCH_MAX_SECONDS", 1800);
/** Seeding 100,000 devices, starting the cluster and the server: room on top of the rollout's bound. */
const SETUP_SECONDS = 900;
const SAMPLE_EVERY_MS = 250;
const WATCH_EVERY_MS = 200;

const SCRIPT = `/*---
name: bench_rollout
schema:
  type: object
  properties:
    ok: { type: boolean }
---*/
function main() { return { ok: true }; }
`;

const { cleanups, run } = benchLifecycle((MAX_SECONDS + SETUP_SECONDS) * 1000);
const seconds = (ms: number | undefined) => (ms === undefined ? "—" : `${(ms / 1000).toFixed(2)} s`);
const rate = (n: number, from: number | undefined, to: number | undefined) =>
  from === undefined || to === undefined || to <= from ? "—" : `${Math.round((n * 1000) / (to - from))}/s`;

async function main() {
  console.log(
    `${BENCH}: ${DEVICES} devices, canary ${CANARY || "none"}, concurrency ${CONCURRENCY}, ${CALLERS} callers, at most ${MAX_SECONDS} s`,
  );
  const { url: databaseUrl, sql, db } = await startMigratedBenchDatabase(BENCH, 4, cleanups);
  const { devices } = await seedFleet(sql, DEVICES, 0);
  const server = await startBenchServer({ databaseUrl, extraEnv: { OUTPOST_ROLE: "all" }, cleanups });

  const operator = await createOperator(db, {
    email: `bench-rollout-${Date.now()}@example.test`,
    password: "bench password 1",
    role: "operator",
  });
  const cookie = `${SESSION_COOKIE}=${await createSession(db, { operatorId: operator.id, ttlHours: 4 })}`;
  const { token } = await createApiToken(db, { name: "bench rollout", role: "operator" });

  const fleet = new AnsweringFleet(devices, heartbeatBodyText());
  cleanups.push(() => fleet.close());

  const created = performance.now();
  const response = await fetch(`${server.url}/api/v1/rollouts`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({
      action: { type: "install_script", script: SCRIPT },
      target: { q: "product:atom" },
      canary_count: CANARY,
      concurrency: CONCURRENCY,
      failure_threshold: THRESHOLD,
    }),
  });
  const planned = performance.now() - created;
  if (response.status !== 201)
    throw new Error(`create answered ${response.status}: ${await response.text()}`);
  const rollout = ((await response.json()) as { data: { id: string; total: number; canary_size: number } })
    .data;
  if (rollout.total !== DEVICES) throw new Error(`the rollout has ${rollout.total} devices, not ${DEVICES}`);
  const firstWave = Math.min(CONCURRENCY, rollout.canary_size || rollout.total);

  const deadline = created + MAX_SECONDS * 1000;
  let finished: { at: number; status: string } | undefined;
  const over = () => finished !== undefined || performance.now() >= deadline;

  // The database side: when the first wave's commands were queued, when the rollout finished.
  let queued: number | undefined;
  const watch = (async () => {
    while (!over()) {
      if (queued === undefined) {
        const [q] = await sql<{ n: number }[]>`select count(*)::int as n from rollout_targets
          where rollout_id = ${rollout.id}::uuid and command_id is not null`;
        if (q!.n >= firstWave) queued = performance.now() - created;
      }
      const [row] = await sql<{ status: string; finished: boolean; reason: string | null }[]>`
        select status, finished_at is not null as finished, pause_reason as reason
        from rollouts where id = ${rollout.id}::uuid`;
      if (row!.finished || row!.reason === "threshold")
        finished = { at: performance.now() - created, status: row!.reason ?? row!.status };
      else await Bun.sleep(WATCH_EVERY_MS);
    }
  })();

  // An operator watching: the page and its live fragment, in turn.
  const latencies = { page: [] as number[], fragment: [] as number[] };
  let pageErrors = 0;
  const sample = (async () => {
    while (!over()) {
      for (const [kind, path] of [
        ["page", `/rollouts/${rollout.id}`],
        ["fragment", `/rollouts/${rollout.id}/progress`],
      ] as const) {
        const started = performance.now();
        const got = await fetch(`${server.url}${path}`, { headers: { cookie } }).catch(() => undefined);
        await got?.arrayBuffer();
        if (got?.status === 200) latencies[kind].push(performance.now() - started);
        else pageErrors++;
      }
      await Bun.sleep(SAMPLE_EVERY_MS);
    }
  })();

  await fleet.run(CALLERS, server.url, over);
  // Every device answered: the driver still records the last results.
  await Promise.all([watch, sample]);

  const [counts] = await sql<Record<string, number>[]>`
    select count(*) filter (where state = 'queued')::int as queued,
      count(*) filter (where state = 'delivered')::int as delivered,
      count(*) filter (where state = 'succeeded')::int as succeeded,
      count(*) filter (where state = 'failed')::int as failed,
      count(*) filter (where state = 'skipped')::int as skipped
    from rollout_targets where rollout_id = ${rollout.id}::uuid`;
  const f = fleet.counts;
  const p = (list: number[], q: number) =>
    percentile(
      [...list].sort((a, b) => a - b),
      q,
    ).toFixed(1);
  console.log(`  time to queue: create → all waves planned ${seconds(planned)} (${rollout.total} devices, canary ${rollout.canary_size});
    → first ${firstWave} commands queued ${seconds(queued)}
  delivery: ${f.delivered} commands delivered, ${rate(f.delivered, f.firstDeliveredAt, f.lastDeliveredAt)}; ${f.results} results, ${rate(f.results, f.firstResultAt, f.lastResultAt)} (${f.heartbeats} heartbeats, ${f.errors} errors)
  time to finish: ${finished ? `${seconds(finished.at)} (${finished.status})` : `not finished within ${MAX_SECONDS} s`}; devices ${JSON.stringify(counts)}
  progress page p50 ${p(latencies.page, 50)} ms, p95 ${p(latencies.page, 95)} ms; fragment p50 ${p(latencies.fragment, 50)} ms, p95 ${p(latencies.fragment, 95)} ms (${latencies.page.length} samples each, while it ran; ${pageErrors} not 200)`);
  if (finished?.status !== "completed") process.exitCode = 1;
}

await run(main);
