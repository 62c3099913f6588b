import type postgres from "postgres";
import { schemaHash } from "../../modules/devices/validation";
import { parseHostKey } from "../../modules/terminal/keys";
import { HOST_KEY, heartbeatBody, SCHEMA_DEFINITION, storedPayload } from "./body";

/**
 * `devices` approved devices straight into the table (a known token each: bench-token-<n>, seen in the
 * last 30 s like a polling fleet, the agent's schema stored as its registration stores it) and `telemetryRows` telemetry rows over the last 2 days, both with
 * generate_series: the API would take hours for a real fleet. Returns the devices as the load uses them.
 */
export async function seedFleet(db: postgres.Sql, devices: number, telemetryRows: number) {
  const macs = Array.from({ length: devices }, (_, i) =>
    (0x02_00_00_00_00_00 + i).toString(16).padStart(12, "0").toUpperCase().match(/../g)!.join(":"),
  );
  // Not seen for the first time: that would run the live trigger's function.
  let seedStarted = performance.now();
  const hash = schemaHash({ ...SCHEMA_DEFINITION });
  await db`insert into telemetry_schemas (hash, schema) values (${hash}, ${JSON.stringify(SCHEMA_DEFINITION)}::jsonb)`;
  for (let from = 0; from < devices; from += 50_000) {
    const to = Math.min(devices, from + 50_000) - 1;
    await db`
    insert into devices (mac_address, product_name, approval_status, api_token_hash, token_issued_at, last_seen_at,
      schema_hash)
    select upper(regexp_replace(lpad(to_hex(${0x02_00_00_00_00_00} + i), 12, '0'), '(..)(?!$)', '\\1:', 'g')),
      'atom', 'approved', encode(sha256(convert_to('bench-token-' || i, 'UTF8')), 'hex'), now(),
      now() - make_interval(secs => i % 30), ${hash}
    from generate_series(${from}::bigint, ${to}::bigint) i`;
  }
  // Each device's host key pinned, as after its first heartbeat: the load measures the steady state.
  const key = parseHostKey(HOST_KEY)!;
  await db`insert into device_host_keys (device_id, public_key, fingerprint, pinned_by)
    select id, ${key.publicKey}, ${key.fingerprint}, 'first heartbeat' from devices`;
  const seeded = await db<{ id: string; mac_address: string }[]>`select id, mac_address from devices`;
  const byMac = new Map(seeded.map((d) => [d.mac_address, d.id]));
  const fleet = macs.map((mac, i) => ({ id: byMac.get(mac)!, token: `bench-token-${i}`, mac }));
  if (fleet.some((d) => !d.id)) throw new Error("a seeded device is missing");
  console.log(`  ${devices} devices seeded in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`);
  if (telemetryRows > 0) {
    seedStarted = performance.now();
    await db`select telemetry_ensure_partitions((now() - interval '3 days')::date, (now() + interval '1 day')::date)`;
    if (process.env.BENCH_TELEMETRY_VACUUM === "postgres-defaults") await postgresDefaultVacuum(db);
    const perDevice = Math.max(1, Math.ceil(telemetryRows / devices));
    const rows = Math.min(devices, Math.ceil(telemetryRows / perDevice));
    const payload = storedPayload(heartbeatBody(macs[0]!, 1));
    for (let offset = 0; offset < rows; offset += 10_000) {
      await db`
      insert into telemetry_events (id, device_id, recorded_at, payload)
      select uuidv7(t - now()), d.id, t, ${payload}::json
      from (select id, row_number() over (order by id) as rank from devices order by id offset ${offset} limit ${Math.min(10_000, rows - offset)}) d
      cross join lateral (
        select now() - interval '10 seconds' - make_interval(secs => (172800.0 / ${perDevice}) * k + (d.rank % 97)) as t
        from generate_series(0, ${perDevice - 1}) k) g`;
    }
    const [{ n }] = await db<{ n: number }[]>`select count(*)::int as n from telemetry_events`;
    console.log(`  ${n} telemetry rows seeded in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`);
  }
  await settle(db);
  return { devices: fleet, macs };
}

/**
 * `BENCH_TELEMETRY_VACUUM=postgres-defaults`: the telemetry partitions vacuumed as PostgreSQL would by
 * default (what Outpost did before migration 0041), for an A/B with its own settings; pair it with
 * `BENCH_PG_SETTINGS=autovacuum_naptime=1min`. Set, not reset: the partitions job applies Outpost's to
 * partitions without an insert threshold of their own.
 */
async function postgresDefaultVacuum(db: postgres.Sql) {
  const parts = await db<{ relname: string }[]>`
    select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'public.telemetry_events'::regclass`;
  for (const { relname } of parts)
    await db.unsafe(`alter table public."${relname}" set (autovacuum_vacuum_insert_scale_factor = 0.2,
      autovacuum_vacuum_insert_threshold = 1000, autovacuum_freeze_min_age = 50000000)`);
  console.log(`  telemetry partitions vacuumed with PostgreSQL's defaults (${parts.length} partitions)`);
}

/**
 * Leaves the seeded tables as a running fleet's are, so the load does not pay for the seeding: vacuumed
 * (else autovacuum's first pass over millions of fresh rows, setting their hint bits and visibility,
 * dirties every page while the load runs: the steady benchmark's load fell minutes behind) and
 * analysed, then a checkpoint (seeding 10 M rows writes ~25 GB of WAL, and a checkpoint still
 * flushing it wrote 277 MB during one 10 s measurement). The load then starts right after a
 * checkpoint, when each page's first change logs a full-page image.
 */
async function settle(db: postgres.Sql) {
  const started = performance.now();
  await db`vacuum (analyze) devices`;
  // As autovacuum would have left them: Outpost's settings freeze telemetry at its first pass (migration
  // 0041); PostgreSQL's defaults leave it visible but not frozen.
  if (process.env.BENCH_TELEMETRY_VACUUM === "postgres-defaults") await db`vacuum (analyze) telemetry_events`;
  else await db`vacuum (analyze, freeze) telemetry_events`;
  await db`checkpoint`;
  console.log(
    `  vacuum, analyze and checkpoint after seeding: ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
}
