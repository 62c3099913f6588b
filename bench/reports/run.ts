/**
 * Reports benchmark: 10,000 devices (two products) and 5,000,000 telemetry rows over 7 days.
 *
 *   node_modules/.bin/bun bench/reports/run.ts [--devices 10000] [--telemetry 5000000] [--runs 30] [--csv-rows 1000000]
 *
 * Seeds with set-based SQL into an embedded PostgreSQL in a temp dir (or DATABASE_URL: it TRUNCATES
 * devices and telemetry there), starts Outpost's web role as a child process (`./outpost start`) so
 * its memory can be read from /proc, and times over loopback, request to last byte, after warm-up:
 * - raw rows, first page (100 rows, 24 h, every schema), p50/p95;
 * - per device over 24 h, first page (100 devices), and sorted by an aggregate (all 10,000 devices);
 * - time buckets (1 h) over 7 d, first page;
 * - CSV export of ~1,000,000 raw rows: rows/s and the server's RSS growth (peak during − before).
 * Targets (issue #16): each p95 < 300 ms; CSV RSS growth < 100 MB.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import postgres from "postgres";
import { connectDatabase } from "../../modules/platform/database";
import { startEmbeddedPostgres } from "../../modules/platform/embedded-postgres";
import { ReportOptionsCache, requireReport } from "../../modules/reports/definitions";
import { reportResults, viewFromParams } from "../../modules/reports/results";
import { systemClock } from "../../shared/clock";

const args = process.argv.slice(2);
const arg = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const DEVICES = Math.max(100, Math.min(100_000, arg("--devices", 10_000)));
const TELEMETRY = Math.max(10_000, Math.min(20_000_000, arg("--telemetry", 5_000_000)));
const RUNS = Math.max(5, Math.min(500, arg("--runs", 30)));
const CSV_ROWS = Math.max(1000, Math.min(TELEMETRY, arg("--csv-rows", 1_000_000)));
const TOKEN = "bench-reports-token-0123456789abcdef0123456789";
const root = path.resolve(import.meta.dir, "../..");

const dir = mkdtempSync(path.join(tmpdir(), "outpost-bench-reports-"));
const embedded = process.env.DATABASE_URL
  ? undefined
  : await startEmbeddedPostgres({ directory: path.join(dir, "pg"), ephemeral: true });
const databaseUrl = process.env.DATABASE_URL ?? embedded!.url;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
// The server under test: a separate process, so its RSS is its own.
const server = Bun.spawn([path.join(root, "outpost"), "start"], {
  cwd: root,
  env: {
    ...process.env,
    DATABASE_URL: databaseUrl,
    DATA_DIR: dir,
    PORT: String(port),
    HOST: "127.0.0.1",
    OUTPOST_ROLE: "web",
    LOG_LEVEL: "warn",
    SECRET_KEY: "bench-secret-key-bench-secret-key-0123456789",
    OUTPOST_BOOTSTRAP_API_TOKEN: TOKEN,
  },
  stdout: "ignore",
  stderr: "inherit",
});
const auth = { authorization: `Bearer ${TOKEN}` };

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

const database = connectDatabase(databaseUrl, 2);
const sql = database.sql;

async function timed<T>(label: string, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const value = await run();
  console.log(`  ${label}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return value;
}

/** With --explain: the plan of the statement a results URL runs, captured in-process. */
async function explain(label: string, reportId: string, query: string) {
  const captured: { query: string; params: unknown[] }[] = [];
  const debug = postgres(databaseUrl, {
    max: 1,
    onnotice: () => {},
    debug: (_c, q, p) => captured.push({ query: q, params: p as unknown[] }),
  });
  try {
    const report = await requireReport(debug, reportId);
    const reportOptions = new ReportOptionsCache(debug, systemClock);
    captured.length = 0;
    await reportResults(
      debug,
      reportOptions,
      report,
      viewFromParams(Object.fromEntries(new URLSearchParams(query))),
    );
    const last = captured.filter((c) => c.query.includes("telemetry_events")).at(-1)!;
    const plan = await debug.unsafe(`explain (analyze, buffers) ${last.query}`, last.params as never[]);
    console.log(`\n--- ${label}\n${plan.map((r) => r["QUERY PLAN"]).join("\n")}`);
  } finally {
    await debug.end();
  }
}

async function latency(label: string, url: string, runs = RUNS) {
  if (args.includes("--explain")) {
    const [, id, query] = /reports\/([^/]+)\/results\??(.*)$/.exec(url)!;
    await explain(label, id!, query ?? "");
  }
  const samples: number[] = [];
  for (let i = 0; i < runs + 3; i++) {
    const started = performance.now();
    const response = await fetch(`${base}${url}`, { headers: auth });
    const body = (await response.json()) as { data?: { rows: unknown[] } };
    if (response.status !== 200) throw new Error(`${url}: ${response.status} ${JSON.stringify(body)}`);
    if (i >= 3) samples.push(performance.now() - started);
    if (i === 0 && (body.data?.rows.length ?? 0) === 0) console.log(`  (warning: ${label} returned no rows)`);
  }
  samples.sort((a, b) => a - b);
  const pick = (q: number) =>
    samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!.toFixed(0);
  console.log(
    `${label.padEnd(44)} p50 ${pick(0.5).padStart(5)} ms   p95 ${pick(0.95).padStart(5)} ms   max ${samples.at(-1)!.toFixed(0)} ms`,
  );
}

try {
  for (let i = 0; i < 300; i++) {
    const ready = await fetch(`${base}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) break;
    if (i === 299) throw new Error("the server did not become ready");
    await Bun.sleep(200);
  }
  console.log(
    `seeding ${DEVICES.toLocaleString("en-US")} devices and ${TELEMETRY.toLocaleString("en-US")} telemetry rows over 7 days`,
  );
  await sql`truncate devices cascade`;
  await sql`truncate telemetry_events`;
  await sql`truncate custom_reports`;
  await sql`select telemetry_ensure_partitions((now() - interval '8 days')::date, (now() + interval '1 day')::date)`;
  const schema = (
    product: string,
    extra: string,
  ) => `{"product":"${product}","version":"v1","type":"object","properties":{
    "cpu":{"type":"object","properties":{"usage_pct":{"type":"number"}}},
    "memory":{"type":"object","properties":{"used_pct":{"type":"number"}}},
    "${extra}":{"type":"object","properties":{"name":{"type":"string"}}}}}`;
  await timed("devices", () =>
    sql.begin(async (tx) => {
      await tx`set local session_replication_role = replica`;
      await tx`delete from telemetry_schemas`;
      await tx`insert into telemetry_schemas (hash, schema)
        values ('a', ${schema("atom", "host")}::jsonb), ('g', ${schema("gate", "site")}::jsonb)`;
      await tx`
        insert into devices (mac_address, product_name, approval_status, schema_hash, created_at)
        select upper(regexp_replace(lpad(to_hex(i), 12, '0'), '(..)(?!$)', '\\1:', 'g')),
          case when i % 2 = 0 then 'atom' else 'gate' end, 'approved',
          case when i % 2 = 0 then 'a' else 'g' end, now()
        from generate_series(1, ${DEVICES}) i`;
    }),
  );
  const perDevice = Math.ceil(TELEMETRY / DEVICES);
  const stepSeconds = (7 * 86_400) / perDevice;
  // Each device reports every `stepSeconds` over the last 7 days, its phase offset by its rank; ids
  // are UUIDv7 of the event's own time, as live heartbeats get.
  await timed("telemetry", async () => {
    const chunk = 1000;
    for (let offset = 0; offset < DEVICES; offset += chunk) {
      await sql`
        insert into telemetry_events (id, device_id, recorded_at, payload)
        select uuidv7(t - now()), d.id, t,
          json_build_object('scripts', json_build_object(
            'cpu', json_build_object('data', json_build_object('status', 'success', 'output', json_build_object('usage_pct', round((random() * 100)::numeric, 1)))),
            'memory', json_build_object('data', json_build_object('status', 'success', 'output', json_build_object('used_pct', round((random() * 100)::numeric, 1)))),
            'host', json_build_object('data', json_build_object('status', 'success', 'output', json_build_object('name', 'host-' || d.rank)))),
            'device', json_build_object('hostname', 'host-' || d.rank), 'meta', json_build_object('script_count', 3))
        from (select id, row_number() over (order by id) as rank from devices order by id offset ${offset} limit ${chunk}) d
        cross join lateral (
          select now() - make_interval(secs => ${stepSeconds}::float8 * k + (d.rank % 97) * ${stepSeconds}::float8 / 97) as t
          from generate_series(0, ${perDevice - 1}) k
        ) g`;
    }
  });
  await timed("analyze", () => sql`analyze telemetry_events`.then(() => sql`analyze devices`));
  const [{ rows24 }] = await sql<{ rows24: number }[]>`
    select count(*)::int as rows24 from telemetry_events where recorded_at >= now() - interval '24 hours'`;
  console.log(`  rows in the last 24 h: ${rows24.toLocaleString("en-US")}`);

  const create = async (name: string, config: unknown) => {
    const response = await fetch(`${base}/api/v1/reports`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ name, config }),
    });
    const body = (await response.json()) as { data: { id: string } };
    if (response.status !== 201) throw new Error(JSON.stringify(body));
    return body.data.id;
  };
  const fields = [
    { path: "cpu.usage_pct", alias: "cpu" },
    { path: "memory.used_pct", alias: "mem" },
  ];
  const all = await create("fleet", { fields, range: { preset: "24h" } });
  const week = await create("week", {
    schema_id: "atom",
    fields,
    range: { preset: "7d" },
    mode: "buckets",
  });

  console.log(`\n${RUNS} runs each after 3 warm-up requests (server: separate process, loopback):`);
  await latency("raw rows, first page (24 h, all schemas)", `/api/v1/reports/${all}/results`);
  await latency(
    "raw rows, first page, cpu > 50 filter",
    `/api/v1/reports/${all}/results?filter_column=cpu&filter_operator=%3E&filter_value=50`,
  );
  await latency("per device 24 h, first page", `/api/v1/reports/${all}/results?mode=per_device`);
  await latency(
    "time buckets 1 h over 7 d (atom), first page",
    `/api/v1/reports/${week}/results?mode=buckets&bucket=1h`,
  );
  await latency(
    "per device 24 h sorted by cpu.avg (all devices)",
    `/api/v1/reports/${all}/results?mode=per_device&sort_by=cpu.avg&sort_dir=desc`,
    Math.min(RUNS, 5),
  );

  // CSV: a custom range holding about CSV_ROWS rows.
  const hours = Math.max(1, Math.round((CSV_ROWS / TELEMETRY) * 7 * 24));
  const from = new Date(Date.now() - hours * 3_600_000).toISOString();
  const to = new Date(Date.now() + 60_000).toISOString();
  const [{ n: csvCount }] = await sql<{ n: number }[]>`
    select count(*)::int as n from telemetry_events where recorded_at >= ${from}::timestamptz and recorded_at < ${to}::timestamptz`;
  const exportId = await create("export", { fields, range: { preset: "custom", from, to } });
  await fetch(`${base}/readyz`);
  Bun.gc(true);
  await Bun.sleep(500);
  const pid = server.pid;
  const before = rssMb(pid);
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(pid));
  }, 50);
  const started = performance.now();
  const response = await fetch(`${base}/reports/${exportId}.csv`, { headers: auth });
  if (response.status !== 200) throw new Error(`csv: ${response.status}`);
  let bytes = 0;
  let lines = 0;
  const reader = response.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    for (const byte of value) if (byte === 10) lines++;
  }
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  peak = Math.max(peak, rssMb(pid));
  const rows = lines - 1;
  console.log(
    `\nCSV export: ${rows.toLocaleString("en-US")} rows (expected ${csvCount.toLocaleString("en-US")}), ${(bytes / 1e6).toFixed(0)} MB in ${seconds.toFixed(1)} s = ${Math.round(rows / seconds).toLocaleString("en-US")} rows/s`,
  );
  console.log(
    `server RSS: ${before.toFixed(0)} MB before, peak ${peak.toFixed(0)} MB during → growth ${(peak - before).toFixed(0)} MB`,
  );

  // A cancelled download: abort after the first chunks, then count the statements the server still
  // commits (each CSV batch is one); ~0 means the export stopped with the client.
  const commits = async () =>
    (
      await sql<
        { n: string }[]
      >`select xact_commit::text as n from pg_stat_database where datname = current_database()`
    )[0]!.n;
  const abort = new AbortController();
  const partial = await fetch(`${base}/reports/${exportId}.csv`, { headers: auth, signal: abort.signal });
  const partialReader = partial.body!.getReader();
  for (let i = 0; i < 20; i++) await partialReader.read();
  abort.abort();
  await Bun.sleep(500);
  const c0 = Number(await commits());
  await Bun.sleep(2000);
  const c1 = Number(await commits());
  console.log(
    `cancelled export: ${c1 - c0 - 1} transactions committed in the 2 s after the abort (a running export commits ~${Math.round(rows / seconds / 1000)}/s)`,
  );
} finally {
  server.kill();
  await server.exited;
  await database.close();
  if (embedded) await embedded.stop();
  rmSync(dir, { recursive: true, force: true });
}
