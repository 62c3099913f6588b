/**
 * Console benchmark: server time of the console's pages with a large fleet.
 *
 *   npm run bench:console -- [--runs 60] [--devices 100000] [--telemetry 1000000]
 *   (up to --devices 1000000 --telemetry 10000000; --telemetry is at least 593,280, the charted devices' rows)
 *
 * Seeds with set-based SQL (generate_series; a few seconds to several minutes), folds the telemetry into
 * the rollups (hourly, 6-minute) with the telemetry_rollup job's own code (timed: the job's throughput
 * on a backlog), starts the web role against the same
 * database (an embedded PostgreSQL in a temp dir, or DATABASE_URL), signs in, and times each page from
 * request to the last byte over loopback: p50 / p95 / max after warm-up. Target: p95 < 50 ms.
 * The fleet is tagged (docs/fleet.md): every device `site=site-<i % 10>` (10 % each), 1 % `env=lab`,
 * 50 devices `canary=yes`, and every agent declares `rack=r<i % 20>` (5 % each); two saved views.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startOutpost } from "../../app";
import { countMatchingFleet } from "../../modules/devices/fleet-counts";
import { deviceMatch } from "../../modules/fleet/service";
import { createOperator, createSession } from "../../modules/operators/service";
import { SESSION_COOKIE } from "../../modules/platform/access";
import { loadConfig } from "../../modules/platform/config";
import { connectDatabase } from "../../modules/platform/database";
import { startEmbeddedPostgres } from "../../modules/platform/embedded-postgres";
import { createLogger } from "../../modules/platform/logger";
import { rollUpTelemetry } from "../../modules/telemetry/rollups";
import { ensureTelemetryPartitions } from "../../modules/telemetry/service";
import { heartbeatBody, SCHEMA_DEFINITION, storedPayload } from "../heartbeat/body";
import { COUNT_TARGET_MS, type Page, timePages, timeRuns } from "./timing";

const args = process.argv.slice(2);
const arg = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const RUNS = Math.max(5, Math.min(1000, arg("--runs", 60)));
const DEVICES = Math.max(1000, Math.min(1_000_000, arg("--devices", 100_000)));
const BUSY = 200; // devices with a heartbeat every 30 s for 24 h
const BUSY_ROWS = 2880;
const HEAVY_ROWS = 20_160; // one device with a heartbeat every 30 s for 7 days
/** The busy devices' and the heavy device's rows: the fleet's share is what --telemetry leaves after them. */
const FIXED_ROWS = BUSY * BUSY_ROWS + HEAVY_ROWS - BUSY_ROWS;
const ASKED_TELEMETRY = arg("--telemetry", 1_000_000);
// Fewer rows than the charted devices need would leave the fleet a negative count: raise it, and say so.
const TELEMETRY = Math.max(FIXED_ROWS, Math.min(10_000_000, ASKED_TELEMETRY));
if (TELEMETRY !== ASKED_TELEMETRY)
  console.log(
    `--telemetry ${ASKED_TELEMETRY.toLocaleString("en-US")} is outside ${FIXED_ROWS.toLocaleString("en-US")}` +
      ` (the ${BUSY} busy devices' and the 7-day device's rows) to 10,000,000: using ${TELEMETRY.toLocaleString("en-US")}`,
  );

const dir = mkdtempSync(path.join(tmpdir(), "outpost-bench-console-"));
const embedded = process.env.DATABASE_URL
  ? undefined
  : await startEmbeddedPostgres({ directory: path.join(dir, "pg") }); // as installed: tuned, durable
const databaseUrl = process.env.DATABASE_URL ?? embedded!.url;
const config = loadConfig({
  DATABASE_URL: databaseUrl,
  DATA_DIR: dir,
  PORT: "0",
  HOST: "127.0.0.1",
  OUTPOST_ROLE: "web",
  LOG_LEVEL: "warn",
  SECRET_KEY: "bench-secret-key-bench-secret-key-0123456789",
});
const app = await startOutpost(config, createLogger("warn"), { announceSetupCode: () => {} });
const database = connectDatabase(databaseUrl, 4);
const sql = database.sql;

function time<T>(label: string, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  return run().then((value) => {
    console.log(`  ${label}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
    return value;
  });
}

/**
 * After rewriting `tables` wholesale (a seeding step, not what a fleet does): vacuum and analyze them,
 * then write the dirty pages out, so the pages are timed against a database at rest rather than
 * beside the checkpoint of a few hundred MB of the benchmark's own writes.
 */
async function settle(tables: string[]) {
  await sql`vacuum analyze ${sql(tables)}`;
  await sql`checkpoint`.catch((error: Error) => console.log(`  (no checkpoint: ${error.message})`));
}

try {
  console.log(
    `seeding ${DEVICES.toLocaleString("en-US")} devices and ${TELEMETRY.toLocaleString("en-US")} telemetry rows`,
  );
  await sql`truncate devices cascade`;
  // (A DATABASE_URL may hold an earlier run's rows: start from none.)
  await sql`truncate telemetry_events, telemetry_hourly, telemetry_6min, telemetry_fleet_hourly, telemetry_rollup_progress`;
  await ensureTelemetryPartitions(sql, 2);
  await sql`select telemetry_ensure_partitions((now() - interval '8 days')::date, now()::date)`;
  await sql`select daily_partitions_ensure('telemetry_6min', 'bucket', (now() - interval '2 days')::date, now()::date)`;
  // Seeding only: triggers off (no live-update notifications for 100,000 inserts).
  await time("devices", () =>
    sql.begin(async (tx) => {
      await tx`set local session_replication_role = replica`;
      // Each product's devices announce the agent's built-in schema under their product's name.
      await tx`delete from telemetry_schemas`;
      await tx`insert into telemetry_schemas (hash, schema)
        select 'bench-schema-' || k, jsonb_set(${JSON.stringify(SCHEMA_DEFINITION)}::jsonb, '{product}', to_jsonb('product-' || k))
        from generate_series(0, 7) k`;
      await tx`
        insert into devices (mac_address, product_name, approval_status, ipv4_address, metadata, labels, last_seen_at, created_at, approval_changed_at, schema_hash)
        select
          upper(regexp_replace(lpad(to_hex(i), 12, '0'), '(..)(?!$)', '\\1:', 'g')),
          'product-' || (i % 8),
          (case when i % 10 < 7 then 'approved' when i % 10 < 9 then 'pending' else 'rejected' end)::device_approval_status,
          '10.' || (i / 65536) % 256 || '.' || (i / 256) % 256 || '.' || i % 256,
          jsonb_build_object('name', 'dev-' || i, 'hostname', 'host-' || i),
          jsonb_build_object('rack', 'r' || i % 20),
          case when i % 10 < 7 then now() - make_interval(secs => (i % 600)) end,
          now() - make_interval(secs => (${DEVICES} - i) * 60),
          case when i % 10 < 7 then now() - interval '1 day' end,
          'bench-schema-' || (i % 8)
        from generate_series(1, ${DEVICES}) as i`;
      // Operators' tags: a site for everyone, a 1 % lab, 50 canaries (by the MAC's number).
      await tx`
        insert into device_tags (device_id, key, value)
        select id, t.key, t.value from (
          select id, ('x' || replace(mac_address, ':', ''))::bit(48)::bigint as i from devices) d
        cross join lateral (values
          ('site', 'site-' || d.i % 10),
          (case when d.i % 100 = 0 then 'env' end, 'lab'),
          (case when d.i % ${Math.max(1, Math.floor(DEVICES / 50))} = 0 then 'canary' end, 'yes')) t(key, value)
        where t.key is not null`;
      // Agents' labels, as registrations declaring them leave them (modules/fleet syncDeclaredLabels).
      await tx`insert into device_tags (device_id, source, key, value)
        select id, 'agent', l.key, l.value from devices, jsonb_each_text(labels) l`;
      await tx`delete from saved_views`;
      await tx`insert into saved_views (name, query, created_by) values
        ('site-3 online, not lab', 'tag:site=site-3 -tag:env=lab status:online', 'bench'),
        ('canaries', 'tag:canary=yes', 'bench')`;
    }),
  );
  // 100 payload variants shaped like the agent's built-in scripts, reused round-robin.
  await sql`drop table if exists bench_payloads, bench_devices, bench_rows`;
  await sql`create unlogged table bench_payloads as
    select v, jsonb_build_object(
      'device', jsonb_build_object('name', 'bench'),
      'scripts', jsonb_build_object(
        'cpu', jsonb_build_object('data', jsonb_build_object('status', 'success', 'output', jsonb_build_object('usage_pct', round((random() * 100)::numeric, 1), 'cores', 4))),
        'memory', jsonb_build_object('data', jsonb_build_object('status', 'success', 'output', jsonb_build_object('used_pct', round((30 + random() * 40)::numeric, 1)))),
        'disk', jsonb_build_object('data', jsonb_build_object('status', 'success', 'output', jsonb_build_object('root_used_pct', round((50 + v % 40)::numeric, 1)))),
        'load', jsonb_build_object('data', jsonb_build_object('status', 'success', 'output', jsonb_build_object('load_1m', round((random() * 4)::numeric, 2))))),
      'meta', jsonb_build_object('script_count', 4))::text::json as stored
    from generate_series(0, 99) as v`;
  // The charted devices' heartbeats carry what the agent sends (~2 KB with the built-in scripts):
  // a chart's cost is parsing them. (The rest of the fleet keeps the small ones: seeding stays fast.)
  const agentPayloads = Array.from({ length: 100 }, (_, i) =>
    storedPayload(heartbeatBody("AA:BB:CC:00:00:01", 3600 + i * 30)),
  );
  // Stored as the server stores them: its compact text, straight to json. A trip through jsonb would
  // add a space after every colon and comma and push the ~1.9 KB payloads over the ~2 KB TOAST
  // threshold: every charted row pglz-compressed, as no real heartbeat of that size is.
  await sql`insert into bench_payloads (v, stored)
    select 100 + i - 1, p::json from unnest(${agentPayloads}::text[]) with ordinality as u(p, i)`;
  await sql`create unlogged table bench_devices as select (row_number() over (order by id))::int as n, id from devices`;
  await sql`create unlogged table bench_rows (device_id uuid, recorded_at timestamptz, v int)`;
  await sql`create index on bench_devices (n)`;
  const busyIds = await sql<{ id: string }[]>`
    select id from devices where approval_status = 'approved' order by created_at desc limit ${BUSY}`;
  await time(
    `telemetry: ${BUSY} busy devices × ${BUSY_ROWS}`,
    () => sql`
    insert into bench_rows (device_id, recorded_at, v)
    select d.id, now() - make_interval(secs => s * 30 + 1), 100 + s % 100
    from unnest(${busyIds.map((r) => r.id)}::uuid[]) as d(id), generate_series(0, ${BUSY_ROWS - 1}) as s`,
  );
  const heavy = busyIds.at(-1)!.id;
  await time(
    `telemetry: 1 device × ${HEAVY_ROWS} over 7 days`,
    () => sql`
    insert into bench_rows (device_id, recorded_at, v)
    select ${heavy}::uuid, now() - make_interval(secs => s * 30 + 1), 100 + s % 100
    from generate_series(${BUSY_ROWS}::int, ${HEAVY_ROWS - 1}::int) as s`,
  );
  const rest = TELEMETRY - BUSY * BUSY_ROWS - (HEAVY_ROWS - BUSY_ROWS);
  await time(
    `telemetry: ${rest.toLocaleString("en-US")} rows over the fleet`,
    () => sql`
    insert into bench_rows (device_id, recorded_at, v)
    select d.id, now() - make_interval(secs => (g::bigint * 7919 % 86000)::int + 1), g % 100
    from generate_series(1, ${rest}) as g
    join bench_devices d on d.n = g % ${DEVICES} + 1`,
  );
  // In time order, as heartbeats arrive: a device's rows of a day lie on as many pages as it sent
  // heartbeats, interleaved with the fleet's, and a time window's rows lie together.
  await time(
    "telemetry: the rows",
    () => sql`
    insert into telemetry_events (id, device_id, recorded_at, payload)
    select gen_random_uuid(), r.device_id, r.recorded_at, p.stored
    from (select * from bench_rows order by recorded_at) r join bench_payloads p on p.v = r.v`,
  );
  await sql`drop table bench_payloads, bench_devices, bench_rows`;
  // A fleet's tables are vacuumed (all-visible) long before anyone reads them: so are the seed's.
  await time("vacuum analyze", () => sql`vacuum analyze`);
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from telemetry_events`;
  console.log(`  telemetry rows: ${n.toLocaleString("en-US")}`);
  // What the telemetry_rollup job does over the seeded days (the 7- and 30-day charts and the
  // dashboard read its rollups), timed: a measure of the job's throughput too.
  const rollupStarted = performance.now();
  const rollup = await rollUpTelemetry(sql, { budgetMs: 3_600_000 });
  const rollupSeconds = (performance.now() - rollupStarted) / 1000;
  console.log(
    `  rollups: ${rollup.heartbeats.toLocaleString("en-US")} heartbeats in ${rollup.windows} windows, ${rollupSeconds.toFixed(1)} s (${Math.round(rollup.heartbeats / rollupSeconds).toLocaleString("en-US")} heartbeats/s)`,
  );
  await settle(["telemetry_hourly", "telemetry_6min", "telemetry_fleet_hourly"]);

  const admin = await createOperator(database.db, {
    email: `bench-${Date.now()}@example.test`, // unique: a DATABASE_URL may hold an earlier run's operator
    password: "bench password 1",
    role: "admin",
  });
  const token = await createSession(database.db, { operatorId: admin.id, ttlHours: 2 });
  const headers = { cookie: `${SESSION_COOKIE}=${token}` };
  const base = app.url;
  if (!base) throw new Error("the web role did not listen");

  // A deep page: the cursor of the device at position ~90% in the default order (created_at desc).
  const cursorAt = async (offset: number, keySql: string) => {
    const [row] = await sql<{ k: string; id: string }[]>`
      select (${sql.unsafe(keySql)})::text as k, d.id from devices d order by ${sql.unsafe(keySql)} desc, d.id desc offset ${offset} limit 1`;
    return Buffer.from(JSON.stringify([row!.k, row!.id])).toString("base64url");
  };
  const deep = await cursorAt(Math.floor(DEVICES * 0.9), "d.created_at");
  const deepByName = Buffer.from(
    JSON.stringify(
      Object.values(
        (
          await sql<{ k: string; id: string }[]>`
          select coalesce(d.display_name, device_display_name(d.metadata, d.mac_address)) as k, d.id from devices d
          order by coalesce(d.display_name, device_display_name(d.metadata, d.mac_address)), d.id offset ${Math.floor(DEVICES * 0.8)} limit 1`
        )[0]!,
      ),
    ),
  ).toString("base64url");
  const busy = busyIds[0]!.id;

  if (args.includes("--explain")) {
    const { deviceChartData } = await import("../../modules/telemetry/series");
    const to = new Date();
    const from = new Date(to.getTime() - 86_400_000);
    const fields = ["cpu.user_percent", "memory.used_percent", "cpu.load_1m", "cpu.load_5m", "cpu.cores"];
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const data = await deviceChartData(sql, busyIds[0]!.id, fields, from, to);
      console.log(
        `chart query: ${(performance.now() - started).toFixed(1)} ms, ${data.events} events, ${data.t.length} buckets`,
      );
    }
    const plan = await sql.unsafe(`explain (analyze, buffers) select bucket, stats from telemetry_6min
      where device_id = '${busyIds[0]!.id}' and bucket >= now() - interval '1 day'`);
    for (const row of plan) console.log(Object.values(row)[0]);
  }
  // A live fleet when the pages are timed: the approved devices checked in over the last 10 minutes
  // in batches of 20, as heartbeat batches do, half of them within the 5-minute online window
  // (seeding takes minutes; without this every device would have aged offline, and the online
  // filter would match nothing). Each batch's sighting carries the moment written to last_seen_at.
  await time("last seen: a live fleet", () =>
    sql.begin(async (tx) => {
      await tx`set local session_replication_role = replica`;
      await tx`truncate device_sightings, device_last_sightings`;
      await tx`create temp table bench_seen on commit drop as
        select id, (row_number() over (order by hashtext(id::text)) - 1) / 20 as batch
        from devices where approval_status = 'approved'`;
      await tx`create temp table bench_batches on commit drop as
        select batch, now() - make_interval(secs => batch * 600.0 / (max(batch) over () + 1)) as seen_at
        from (select distinct batch from bench_seen) b`;
      await tx`update devices d set last_seen_at = b.seen_at
        from bench_seen s join bench_batches b using (batch) where d.id = s.id`;
      await tx`insert into device_sightings (seen_at, device_ids)
        select b.seen_at, array_agg(s.id) from bench_seen s join bench_batches b using (batch) group by b.seen_at`;
    }),
  );
  await settle(["devices", "device_sightings"]);
  const lastSeenKey = "coalesce(d.last_seen_at, '-infinity'::timestamptz)";
  const lastSeenPage2 = await cursorAt(49, lastSeenKey);
  const deepPage = Math.min(100, Math.floor(DEVICES / 100)); // 50 devices a page
  const lastSeenPage100 = await cursorAt(deepPage * 50 - 1, lastSeenKey);
  /** The fleet's queries (docs/fleet.md): tags of every frequency, an agent label, views. */
  async function fleetPages(): Promise<Page[]> {
    const views = await sql<{ id: string; name: string }[]>`select id, name from saved_views order by name`;
    const q = (query: string) => `q=${encodeURIComponent(query)}`;
    const lists: [string, string][] = [
      ["/devices tag (10 %: tag:site=site-3)", `/devices?${q("tag:site=site-3")}`],
      ["/devices tag (1 %: tag:env=lab)", `/devices?${q("tag:env=lab")}`],
      ["/devices tag (50 devices: tag:canary=yes)", `/devices?${q("tag:canary=yes")}`],
      ["/devices agent label (5 %: tag:rack=r7)", `/devices?${q("tag:rack=r7")}`],
      [
        "/devices tag, negated (-tag:env=lab tag:site=site-3)",
        `/devices?${q("-tag:env=lab tag:site=site-3")}`,
      ],
      ["/devices tag OR (tag:site=site-1,site-2)", `/devices?${q("tag:site=site-1,site-2")}`],
      ...views.map((v): [string, string] => [`/devices?view= (${v.name})`, `/devices?view=${v.id}`]),
    ];
    // Each list's count (up to 10,000) is a request of its own, fetched once the page is in.
    const counts = lists.map(
      ([label, url]): Page => [
        label.replace(/^\/devices/, "  its count"),
        url.replace(/^\/devices\?/, "/devices/matching?"),
        COUNT_TARGET_MS,
      ],
    );
    return [
      ...lists.flatMap((list, i) => [list, counts[i]!]),
      // A view's dashboard counts its devices exactly: a count.
      ...views.map((v): Page => [`/?view= dashboard (${v.name})`, `/?view=${v.id}`, COUNT_TARGET_MS]),
      ["/api/v1/devices?q=tag:site=site-3", `/api/v1/devices?${q("tag:site=site-3")}`],
    ];
  }

  /**
   * A large view's dashboard answers with its last count and refreshes it in the background (as the
   * fleet's totals): the pages above time that answer; this times the exact count itself, what the
   * first load after a start waits for and each refresh costs.
   */
  async function timeViewCounts() {
    const onlineWindowSeconds = config.deviceOnlineWindowSeconds; // no setting stored: the default
    const views = await sql<{ id: string; name: string }[]>`select id, name from saved_views order by name`;
    for (const view of views) {
      const match = await deviceMatch(database, { view: view.id }, { onlineWindowSeconds });
      await timeRuns(`  exact count of view (${view.name})`, RUNS, COUNT_TARGET_MS, () =>
        countMatchingFleet(sql, onlineWindowSeconds, match.condition ?? sql`true`),
      );
    }
  }

  const pages: Page[] = [
    ["/devices (first page)", "/devices"],
    ["/devices filtered (pending, product-3)", "/devices?approval_status=pending&product=product-3"],
    ["/devices filtered (online)", "/devices?connectivity_status=online"],
    ['/devices search ("dev-4242")', "/devices?search=dev-4242"],
    ["/devices deep page (90% in, keyset)", `/devices?after=${deep}`],
    ["/devices deep page sorted by name", `/devices?sort=name&after=${deepByName}`],
    ["/devices sorted by last seen", "/devices?sort=last_seen_at"],
    ["/devices sorted by last seen, page 2", `/devices?sort=last_seen_at&after=${lastSeenPage2}`],
    [
      `/devices sorted by last seen, page ${deepPage + 1}`,
      `/devices?sort=last_seen_at&after=${lastSeenPage100}`,
    ],
    [
      `/devices sorted by last seen, Previous from page ${deepPage + 1}`,
      `/devices?sort=last_seen_at&before=${lastSeenPage100}`,
    ],
    ["/devices sorted by last seen, oldest first", "/devices?sort=last_seen_at&order=asc"],
    [`/devices/{id} telemetry tab (24 h, ${BUSY_ROWS} rows)`, `/devices/${busy}?tab=telemetry`],
    [`/devices/{id} telemetry tab (7 d, ${HEAVY_ROWS} rows)`, `/devices/${heavy}?tab=telemetry&range=7d`],
    [`/devices/{id} telemetry tab (30 d, ${HEAVY_ROWS} rows)`, `/devices/${heavy}?tab=telemetry&range=30d`],
    ["/devices/{id} overview", `/devices/${busy}`],
    ["/ dashboard", "/"],
    ...(await fleetPages()),
  ];
  await timePages(base, headers, RUNS, pages);
  await timeViewCounts();

  // A silent fleet: nobody checked in for an hour (a network outage, a test bench switched off).
  await time("last seen: nothing for an hour", () =>
    sql.begin(async (tx) => {
      await tx`set local session_replication_role = replica`;
      await tx`update devices set last_seen_at = last_seen_at - interval '1 hour' where last_seen_at is not null`;
      // What the device_sightings_prune job leaves after an hour: each device's latest sighting.
      await tx`truncate device_sightings, device_last_sightings`;
      await tx`insert into device_last_sightings (device_id, seen_at)
        select id, last_seen_at from devices where last_seen_at is not null`;
    }),
  );
  await settle(["devices", "device_last_sightings"]);
  await timePages(base, headers, RUNS, [
    ["/devices filtered (online), nothing online", "/devices?connectivity_status=online"],
    ["/devices sorted by last seen, nothing for an hour", "/devices?sort=last_seen_at"],
    ["/devices sorted by last seen, oldest first, silent", "/devices?sort=last_seen_at&order=asc"],
  ]);
} finally {
  await database.close();
  await app.stop();
  await embedded?.stop();
  rmSync(dir, { recursive: true, force: true });
}
