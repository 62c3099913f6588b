/**
 * The SQL of custom reports over stored telemetry (modules/reports calls this; it never reads the
 * telemetry table itself). One statement per page, filtering, sorting and aggregating in
 * PostgreSQL, keyset-paged so no mode has a row cap and a CSV export can walk every row in batches.
 *
 * Modes:
 * - raw: one row per telemetry event. Default order is arrival, newest first (`id desc`: ids are
 *   UUIDv7, minted when the heartbeat arrives, which is also when `recorded_at` is set), because the
 *   primary key is the only index that orders the whole fleet's rows; other sorts are exact but read
 *   the whole range.
 * - per_device: one row per device over the range (events, last seen, last/min/max/avg of each
 *   numeric field, last value of the others). Default order device_id, which the
 *   (device_id, recorded_at) index delivers, so the first page aggregates only its own devices.
 * - buckets: one row per device and time bucket (avg/min/max of each numeric field); buckets are
 *   aligned to UTC (an hour bucket starts on the hour, a day bucket at 00:00Z).
 *
 * Every value comes in as a bound parameter; JSON paths come from `optionKeyPath` (./field-keys.ts),
 * built from builder option keys that the caller has already checked against the builder schema.
 */
import type { PendingQuery, Row } from "postgres";
import type { Sql } from "../platform/database";
import { optionKeyPath } from "./field-keys";

/** A numeric value: a JSON number, or a string that is one (the agent's scripts send both). */
export const NUMERIC_TEXT = "^\\s*-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?\\s*$";

export type ReportMode = "raw" | "per_device" | "buckets";
export type ColumnType = "number" | "text" | "time" | "uuid";
export type CompareOp = "=" | "!=" | ">" | ">=" | "<" | "<=" | "contains" | "not_contains";

export interface ReportQueryField {
  /** Builder option key. */
  key: string;
  /** Output column name (the report's alias). */
  alias: string;
  numeric: boolean;
}

/** A filter on a telemetry column (`device_id`, `recorded_at`) or a payload field (option key). */
export interface ReportQueryFilter {
  target: { column: "device_id" | "recorded_at" } | { key: string; numeric: boolean };
  op: CompareOp;
  value: string | number;
}

export interface ReportQuerySpec {
  fields: ReportQueryField[];
  from: Date;
  to: Date;
  /** A `select id from devices …` subquery limiting the devices (product/version scope). */
  deviceScope?: PendingQuery<Row[]> | undefined;
  /** Filters of the report definition, on events (before aggregation). */
  filters: ReportQueryFilter[];
  mode: ReportMode;
  bucketSeconds?: number;
  /** A filter on an output column (the detail page's filter row), after aggregation. */
  viewFilter?: { column: string; op: CompareOp; value: string | number } | undefined;
  sort?: { column: string; direction: "asc" | "desc" } | undefined;
  limit: number;
  /** Values of the last row of the previous page, from `ReportPage.next`. */
  after?: (string | number | null)[] | undefined;
}

export interface ReportColumn {
  key: string;
  type: ColumnType;
}

export interface ReportPage {
  columns: ReportColumn[];
  rows: Record<string, string | number | null>[];
  /** Keyset values of the page's last row when more rows follow. */
  next: (string | number | null)[] | undefined;
}

interface OutputColumn extends ReportColumn {
  expr: PendingQuery<Row[]>;
}

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/** The output columns of a mode, in order; `sql` fragments reference the query's aliases. */
export function reportColumns(spec: Pick<ReportQuerySpec, "fields" | "mode">): ReportColumn[] {
  return outputColumns(null, spec).map(({ key, type }) => ({ key, type }));
}

function outputColumns(sql: Sql | null, spec: Pick<ReportQuerySpec, "fields" | "mode">): OutputColumn[] {
  // With sql === null only keys and types are wanted; expressions are placeholders.
  const q = (strings: TemplateStringsArray, ...values: unknown[]) =>
    (sql ? sql(strings, ...(values as never[])) : null) as PendingQuery<Row[]>;
  const raw = (name: string) => (sql ? sql.unsafe(name) : null) as unknown as PendingQuery<Row[]>;
  if (spec.mode === "raw") {
    return [
      { key: "device_id", type: "uuid", expr: q`e.device_id` },
      { key: "recorded_at", type: "time", expr: q`e.recorded_at` },
      ...spec.fields.map((f, i) => ({
        key: f.alias,
        type: (f.numeric ? "number" : "text") as ColumnType,
        expr: raw(`v.v${i}`),
      })),
    ];
  }
  const columns: OutputColumn[] = [{ key: "device_id", type: "uuid", expr: raw("r.device_id") }];
  if (spec.mode === "buckets") columns.push({ key: "bucket", type: "time", expr: raw("r.bucket") });
  columns.push({ key: "events", type: "number", expr: raw("r.events") });
  if (spec.mode === "per_device") columns.push({ key: "last_seen", type: "time", expr: raw("r.last_seen") });
  spec.fields.forEach((f, i) => {
    const stats = spec.mode === "per_device" ? ["last", "min", "max", "avg"] : ["avg", "min", "max"];
    if (f.numeric) {
      for (const stat of stats)
        columns.push({ key: `${f.alias}.${stat}`, type: "number", expr: raw(`r.v${i}_${stat}`) });
    } else if (spec.mode === "per_device") {
      columns.push({ key: f.alias, type: "text", expr: raw(`r.v${i}_last`) });
    }
  });
  return columns;
}

function numericValue(sql: Sql, path: string[]) {
  return sql`case jsonb_typeof(j.p #> ${path}::text[])
      when 'number' then (j.p #>> ${path}::text[])::float8
      when 'string' then case when (j.p #>> ${path}::text[]) ~ ${NUMERIC_TEXT} then (j.p #>> ${path}::text[])::float8 end
    end`;
}

function cast(sql: Sql, type: ColumnType, value: string | number | null) {
  if (type === "number") return sql`${value}::float8`;
  if (type === "time") return sql`${value}::timestamptz`;
  if (type === "uuid") return sql`${value}::uuid`;
  return sql`${value}::text`;
}

/** `expr op value`; text comparisons are case-insensitive, `contains` a substring match. */
function comparison(
  sql: Sql,
  expr: PendingQuery<Row[]>,
  type: ColumnType,
  op: CompareOp,
  value: string | number,
) {
  if (op === "contains" || op === "not_contains") {
    const pattern = `%${String(value).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    return op === "contains"
      ? sql`(${expr})::text ilike ${pattern}`
      : sql`coalesce((${expr})::text not ilike ${pattern}, true)`;
  }
  const left = type === "text" ? sql`lower(${expr})` : expr;
  const right = type === "text" ? sql`lower(${String(value)}::text)` : cast(sql, type, value);
  const ops = { "=": sql`=`, "!=": sql`<>`, ">": sql`>`, ">=": sql`>=`, "<": sql`<`, "<=": sql`<=` };
  return sql`${left} ${ops[op]} ${right}`;
}

/**
 * Up to `take` device ids, ascending, after `after`, that have events in the range: a recursive
 * "loose index scan" that reads one index entry per device instead of every event.
 */
async function nextDevices(
  sql: Sql,
  inRange: PendingQuery<Row[]>,
  after: string | undefined,
  inclusive: boolean,
  take: number,
): Promise<string[]> {
  const start =
    after === undefined
      ? sql``
      : inclusive
        ? sql`and e.device_id >= ${after}::uuid`
        : sql`and e.device_id > ${after}::uuid`;
  const rows = await sql<{ device_id: string }[]>`
    with recursive cand(device_id, n) as (
      (select e.device_id, 1 from telemetry_events e where ${inRange} ${start} order by e.device_id limit 1)
      union all
      select (select e.device_id from telemetry_events e where ${inRange} and e.device_id > c.device_id
                order by e.device_id limit 1), c.n + 1
      from cand c where c.device_id is not null and c.n < ${take}
    )
    select device_id::text from cand where device_id is not null order by n`;
  return rows.map((r) => r.device_id);
}

/** One page of a report. Unknown sort/filter columns fall back to the mode's default. */
export async function reportPage(sql: Sql, spec: ReportQuerySpec): Promise<ReportPage> {
  const filterKeys = spec.filters.flatMap((f) => ("key" in f.target ? [f.target] : []));
  // Per event, the payload is parsed once (OFFSET 0 keeps the planner from inlining the cast into
  // every reference), then each field and filter path is read from it.
  const values = [
    ...spec.fields.map((f, i) => {
      const path = optionKeyPath(f.key);
      return f.numeric
        ? sql`${numericValue(sql, path)} as ${sql(`v${i}`)}`
        : sql`j.p #>> ${path}::text[] as ${sql(`v${i}`)}`;
    }),
    ...filterKeys.map((f, i) => {
      const path = optionKeyPath(f.key);
      return f.numeric
        ? sql`${numericValue(sql, path)} as ${sql(`f${i}`)}`
        : sql`j.p #>> ${path}::text[] as ${sql(`f${i}`)}`;
    }),
  ];
  let filterIndex = 0;
  const eventFilters = spec.filters.map((f) => {
    if ("column" in f.target) {
      const type: ColumnType = f.target.column === "device_id" ? "uuid" : "time";
      return comparison(sql, sql`e.${sql(f.target.column)}`, type, f.op, f.value);
    }
    const type: ColumnType = f.target.numeric ? "number" : "text";
    return comparison(sql, sql`v.${sql(`f${filterIndex++}`)}`, type, f.op, f.value);
  });
  const range = sql`e.recorded_at >= ${spec.from.toISOString()}::timestamptz and e.recorded_at < ${spec.to.toISOString()}::timestamptz`;
  const inRange = sql`${range} ${spec.deviceScope ? sql`and e.device_id in (${spec.deviceScope})` : sql``}`;
  // `devices`: an explicit list of device ids already within the scope (device-order pages), which
  // replaces the scope subquery so the planner reads just those devices' index ranges.
  const baseFor = (devices?: PendingQuery<Row[]>) => sql`from telemetry_events e
    cross join lateral (select ${values.flatMap((v, i) => (i ? [sql`,`, v] : [v]))}
      from (select e.payload::jsonb as p offset 0) j) v
    where ${devices ? sql`${range} ${devices}` : inRange}
      ${eventFilters.length ? eventFilters.map((f) => sql`and ${f}`) : sql``}`;
  const base = baseFor();

  const columns = outputColumns(sql, spec);
  const byKey = new Map(columns.map((c) => [c.key, c]));
  const view = spec.viewFilter && byKey.get(spec.viewFilter.column);
  const viewWhere =
    view && spec.viewFilter
      ? sql`and ${comparison(sql, view.expr, view.type, spec.viewFilter.op, spec.viewFilter.value)}`
      : sql``;
  const sortColumn = spec.sort ? byKey.get(spec.sort.column) : undefined;
  const ascending = spec.sort?.direction === "asc";
  // The tie-breaker makes every order total, so keyset pages never skip or repeat a row.
  const tie =
    spec.mode === "raw"
      ? [{ expr: sql`e.id`, type: "uuid" as ColumnType, key: "tie0" }]
      : spec.mode === "per_device"
        ? [{ expr: sql`r.device_id`, type: "uuid" as ColumnType, key: "device_id" }]
        : [
            { expr: sql`r.device_id`, type: "uuid" as ColumnType, key: "device_id" },
            { expr: sql`r.bucket`, type: "time" as ColumnType, key: "bucket" },
          ];
  // Without a sort column: raw rows newest first, aggregated rows in device (and bucket) order.
  const tieAscending = sortColumn ? ascending : spec.mode !== "raw";
  const dir = (up: boolean) => (up ? sql`asc` : sql`desc`);
  const tieList = (f: (t: (typeof tie)[number]) => PendingQuery<Row[]>): PendingQuery<Row[]>[] =>
    tie.flatMap((t, i) => (i ? [sql`,`, f(t)] : [f(t)]));
  const tieExpr = sql`(${tieList((t) => t.expr)})`;
  let keyset = sql``;
  if (spec.after) {
    const tieValues = spec.after.slice(sortColumn ? 1 : 0);
    const tieValue = sql`(${tieList((t) => cast(sql, t.type, tieValues[tie.indexOf(t)] ?? null))})`;
    const after = tieAscending ? sql`${tieExpr} > ${tieValue}` : sql`${tieExpr} < ${tieValue}`;
    if (!sortColumn) keyset = sql`and ${after}`;
    else {
      const value = spec.after[0] ?? null;
      const e = sortColumn.expr;
      const v = cast(sql, sortColumn.type, value);
      keyset =
        value === null
          ? sql`and (${e} is null and ${after})`
          : ascending
            ? sql`and (${e} > ${v} or (${e} = ${v} and ${after}) or ${e} is null)`
            : sql`and (${e} < ${v} or (${e} = ${v} and ${after}) or ${e} is null)`;
    }
  }
  const order = sortColumn
    ? sql`order by ${sortColumn.expr} ${dir(ascending)} nulls last, ${tieList((t) => sql`${t.expr} ${dir(tieAscending)}`)}`
    : sql`order by ${tieList((t) => sql`${t.expr} ${dir(tieAscending)}`)}`;
  const select = columns.map((c, i) => {
    const expr = c.type === "time" ? sql`to_char(${c.expr} at time zone 'UTC', ${sql.unsafe(ISO)})` : c.expr;
    return sql`${expr} as ${sql(`c${i}`)}`;
  });
  const selectList = select.flatMap((s, i) => (i ? [sql`,`, s] : [s]));
  const limit = spec.limit + 1;
  let rows: Row[];
  if (spec.mode === "raw") {
    rows =
      await sql`select ${selectList}, e.id as tie0 ${base} ${viewWhere} ${keyset} ${order} limit ${limit}`;
  } else {
    const aggregates = spec.fields.flatMap((f, i) => {
      if (!f.numeric) {
        return spec.mode === "per_device"
          ? [
              sql`, (array_agg(v.${sql(`v${i}`)} order by e.recorded_at desc) filter (where v.${sql(`v${i}`)} is not null))[1] as ${sql(`v${i}_last`)}`,
            ]
          : [];
      }
      const value = sql`v.${sql(`v${i}`)}`;
      const parts = [
        sql`, avg(${value}) as ${sql(`v${i}_avg`)}`,
        sql`, min(${value}) as ${sql(`v${i}_min`)}`,
        sql`, max(${value}) as ${sql(`v${i}_max`)}`,
      ];
      if (spec.mode === "per_device")
        parts.push(
          sql`, (array_agg(${value} order by e.recorded_at desc) filter (where ${value} is not null))[1] as ${sql(`v${i}_last`)}`,
        );
      return parts;
    });
    const bucket = sql`make_interval(secs => ${spec.bucketSeconds ?? 3600})`;
    const grouped = (devices?: PendingQuery<Row[]>) =>
      spec.mode === "per_device"
        ? sql`select e.device_id, count(*)::int as events, max(e.recorded_at) as last_seen ${aggregates.length ? aggregates : sql``} ${baseFor(devices)} group by e.device_id`
        : sql`select e.device_id, date_bin(${bucket}, e.recorded_at, timestamptz '2000-01-01T00:00:00Z') as bucket,
            count(*)::int as events ${aggregates.length ? aggregates : sql``} ${baseFor(devices)} group by 1, 2`;
    if (sortColumn) {
      // Sorted by a value: every device's aggregate is needed before the first row is known.
      rows =
        await sql`select ${selectList} from (${grouped()}) r where true ${viewWhere} ${keyset} ${order} limit ${limit}`;
    } else {
      // Device order (the default): take the next few devices that have events in the range (a skip
      // scan of the (device_id, recorded_at) index), aggregate only those, and repeat until the page
      // is full, so a page parses the payloads of its own devices, not the whole range's.
      rows = [];
      const firstAfter = spec.after?.[0];
      let afterDevice = typeof firstAfter === "string" ? firstAfter : undefined;
      // A bucket page may end inside a device: the next page starts in that same device.
      let inclusive = spec.mode === "buckets";
      let take = spec.mode === "per_device" ? limit : 2;
      // Bounded: each pass moves past at least one device, and stops when none is left.
      for (let pass = 0; pass < 100_000 && rows.length < limit; pass++) {
        const ids = await nextDevices(sql, inRange, afterDevice, inclusive, take);
        if (ids.length === 0) break;
        const only = sql`and e.device_id = any(${`{${ids.join(",")}}`}::uuid[])`;
        rows.push(
          ...(await sql`select ${selectList} from (${grouped(only)}) r where true ${viewWhere} ${keyset} ${order} limit ${limit - rows.length}`),
        );
        if (ids.length < take) break;
        afterDevice = ids[ids.length - 1];
        inclusive = false;
        take = Math.min(take * 2, 1000);
      }
    }
  }
  const page = rows.slice(0, spec.limit);
  const out = page.map((row) => {
    const record: Record<string, string | number | null> = {};
    columns.forEach((c, i) => {
      const v = row[`c${i}`];
      // Numbers arrive as numbers (float8, int), everything else as text (times via to_char).
      record[c.key] = (v ?? null) as string | number | null;
    });
    return record;
  });
  let next: ReportPage["next"];
  const last = page[page.length - 1];
  if (rows.length > spec.limit && last) {
    const lastOut = out[out.length - 1]!;
    // The tie's values: raw rows carry theirs (tie0, not an output column), aggregates are output columns.
    const tieValues = tie.map((t) => (lastOut[t.key] ?? last[t.key] ?? null) as string | number | null);
    next = sortColumn ? [lastOut[sortColumn.key] ?? null, ...tieValues] : tieValues;
  }
  return { columns: columns.map(({ key, type }) => ({ key, type })), rows: out, next };
}
