// The report query builder at the service, over telemetry the agent's own scripts produced: every
// comparison operator on numbers, text, device ids and times, on events (filters) and on output columns
// (the detail page's view filter). Each operator is checked against the same predicate computed in
// JavaScript over the same readings, so a mis-compiled operator (`!=` as `=`) fails here.
import { describe, expect, test } from "bun:test";
import postgres from "postgres";
import {
  type CompareOp,
  type ReportQuerySpec,
  reportColumns,
  reportPage,
} from "../../modules/telemetry/report-query";
import { recordTelemetry } from "../../modules/telemetry/service";
import { ScriptedAgent, storedPayload } from "../helpers/agent-telemetry";
import { createTestDatabase } from "../helpers/database";
import { tempDir } from "../helpers/temp";

const database = await createTestDatabase();
const { sql } = database;

const envScript = {
  name: "env",
  schema: { type: "object", properties: { celsius: { type: "number" }, site: { type: "string" } } },
};
const agent = new ScriptedAgent(tempDir("outpost-report-query-"), "sensor", [envScript]);

/**
 * What the devices' scripts reported, in arrival order: celsius (a numeric string once, a non-numeric
 * string once) and site (absent once). Device 2 reports only in the last hour's other bucket.
 */
const READINGS: { device: 0 | 1 | 2; celsius: number | string; site?: string }[] = [
  { device: 0, celsius: 10, site: "Berlin" },
  { device: 0, celsius: 20.5, site: "berlin-north" },
  { device: 0, celsius: 30, site: "Paris" },
  { device: 1, celsius: "20.5", site: "Köln 100%_" },
  { device: 1, celsius: -5, site: "paris" },
  { device: 1, celsius: 40, site: "Lyon" },
  { device: 2, celsius: "n/a", site: "Oslo" },
  { device: 2, celsius: 25 },
];
/** A reading's celsius as the server reads it: a number, a numeric string's number, else null. */
const celsiusOf = (r: (typeof READINGS)[number]) =>
  typeof r.celsius === "number" ? r.celsius : /^-?[0-9.]+$/.test(r.celsius) ? Number(r.celsius) : null;
// On the hour, two hours ago: readings 0..5 fall in one UTC hour, 6..7 in the next.
const start = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 2 * 3_600_000);
const at = (i: number) => new Date(start.getTime() + (i < 6 ? i : 60 + i) * 60_000);

const MACS = ["02:00:00:00:d0:01", "02:00:00:00:d0:02", "02:00:00:00:d0:03"];
const devices: string[] = [];
for (const mac of MACS) {
  const [row] = await sql<{ id: string }[]>`insert into devices (mac_address, approval_status, product_name)
    values (${mac}, 'approved', 'sensor') returning id::text`;
  devices.push(row!.id);
}
for (const [i, r] of READINGS.entries()) {
  const output = r.site === undefined ? { celsius: r.celsius } : { celsius: r.celsius, site: r.site };
  const body = await agent.heartbeat(devices[r.device]!, { env: output });
  await recordTelemetry(sql, devices[r.device]!, storedPayload(body), at(i));
}
const sortedDevices = [...devices].sort();

const FIELDS = [
  { key: "env.celsius", alias: "celsius", numeric: true },
  { key: "env.site", alias: "site", numeric: false },
];

function spec(overrides: Partial<ReportQuerySpec>): ReportQuerySpec {
  return {
    fields: FIELDS,
    from: new Date(start.getTime() - 60_000),
    to: new Date(Date.now() + 60_000),
    filters: [],
    mode: "raw",
    limit: 100,
    ...overrides,
  };
}

/** The indexes of the readings a raw report returns (matched back by time). */
async function rawMatches(overrides: Partial<ReportQuerySpec>): Promise<number[]> {
  const page = await reportPage(sql, spec(overrides));
  const times = page.rows.map((row) => new Date(String(row.recorded_at)).getTime());
  return READINGS.flatMap((_, i) => (times.includes(at(i).getTime()) ? [i] : [])).sort();
}

const expected = (predicate: (r: (typeof READINGS)[number], i: number) => boolean) =>
  READINGS.flatMap((r, i) => (predicate(r, i) ? [i] : [])).sort();

const NUMBER_OPS: [CompareOp, (a: number, b: number) => boolean][] = [
  ["=", (a, b) => a === b],
  ["!=", (a, b) => a !== b],
  [">", (a, b) => a > b],
  [">=", (a, b) => a >= b],
  ["<", (a, b) => a < b],
  ["<=", (a, b) => a <= b],
];

/** Every page of a report, `limit` rows a page, following `next` (bounded). */
async function walk(overrides: Partial<ReportQuerySpec>, limit: number) {
  const rows: Record<string, string | number | null>[] = [];
  let after: (string | number | null)[] | undefined;
  for (let pageNo = 0; pageNo < 50; pageNo++) {
    const page = await reportPage(sql, spec({ ...overrides, limit, after }));
    expect(page.rows.length).toBeLessThanOrEqual(limit);
    rows.push(...page.rows);
    after = page.next;
    if (!after) return rows;
  }
  throw new Error("paging did not end");
}
const timeOf = (row: Record<string, string | number | null>) => new Date(String(row.recorded_at)).getTime();

describe("report filters on events", () => {
  for (const [op, holds] of NUMBER_OPS) {
    test(`number ${op} 20.5 (a numeric string counts as its number)`, async () => {
      const got = await rawMatches({
        filters: [{ target: { key: "env.celsius", numeric: true }, op, value: 20.5 }],
      });
      expect(got).toEqual(
        expected((r) => {
          const c = celsiusOf(r);
          return c !== null && holds(c, 20.5);
        }),
      );
      expect(got.length).toBeGreaterThan(0);
    });
  }

  const TEXT_OPS: [CompareOp, string, (site: string) => boolean][] = [
    ["=", "PARIS", (s) => s.toLowerCase() === "paris"],
    ["!=", "paris", (s) => s.toLowerCase() !== "paris"],
    ["<", "lyon", (s) => s.toLowerCase() < "lyon"],
    ["<=", "lyon", (s) => s.toLowerCase() <= "lyon"],
    [">", "lyon", (s) => s.toLowerCase() > "lyon"],
    [">=", "lyon", (s) => s.toLowerCase() >= "lyon"],
    ["contains", "BERLIN", (s) => s.toLowerCase().includes("berlin")],
    ["not_contains", "berlin", (s) => !s.toLowerCase().includes("berlin")],
    // % and _ are literal characters in a contains filter, not LIKE wildcards.
    ["contains", "100%_", (s) => s.includes("100%_")],
    ["contains", "_", (s) => s.includes("_")],
  ];
  for (const [op, value, holds] of TEXT_OPS) {
    test(`text ${op} ${JSON.stringify(value)} (case-insensitive)`, async () => {
      const got = await rawMatches({
        filters: [{ target: { key: "env.site", numeric: false }, op, value } as never],
      });
      // An absent field matches no comparison, except not_contains (it does not contain the text).
      expect(got).toEqual(expected((r) => (r.site === undefined ? op === "not_contains" : holds(r.site))));
      expect(got.length).toBeGreaterThan(0);
      expect(got.length).toBeLessThan(READINGS.length);
    });
  }

  test("device_id = and != select and exclude one device", async () => {
    const target = { column: "device_id" } as const;
    expect(await rawMatches({ filters: [{ target, op: "=", value: devices[1]! }] })).toEqual(
      expected((r) => r.device === 1),
    );
    expect(await rawMatches({ filters: [{ target, op: "!=", value: devices[1]! }] })).toEqual(
      expected((r) => r.device !== 1),
    );
  });

  test("recorded_at < and >= split the events at a time", async () => {
    const target = { column: "recorded_at" } as const;
    const cut = at(3).toISOString();
    expect(await rawMatches({ filters: [{ target, op: "<", value: cut }] })).toEqual([0, 1, 2]);
    expect(await rawMatches({ filters: [{ target, op: ">=", value: cut }] })).toEqual([3, 4, 5, 6, 7]);
    expect(await rawMatches({ filters: [{ target, op: "<=", value: cut }] })).toEqual([0, 1, 2, 3]);
    expect(await rawMatches({ filters: [{ target, op: ">", value: cut }] })).toEqual([4, 5, 6, 7]);
  });

  test("filters combine with AND", async () => {
    const got = await rawMatches({
      filters: [
        { target: { key: "env.celsius", numeric: true }, op: ">", value: 0 },
        { target: { key: "env.site", numeric: false }, op: "contains", value: "paris" },
      ],
    });
    expect(got).toEqual([2]);
  });
});

describe("the view filter on output columns", () => {
  test("per_device: celsius.max != 30 keeps only the other device; = keeps only this one", async () => {
    const ne = await reportPage(
      sql,
      spec({ mode: "per_device", viewFilter: { column: "celsius.max", op: "!=", value: 30 } }),
    );
    expect(ne.rows.map((r) => r.device_id)).toEqual([devices[1]!, devices[2]!].sort());
    const eq = await reportPage(
      sql,
      spec({ mode: "per_device", viewFilter: { column: "celsius.max", op: "=", value: 30 } }),
    );
    expect(eq.rows.map((r) => r.device_id)).toEqual([devices[0]!]);
  });

  test("per_device aggregates: events, min, max, avg and the last text value per device", async () => {
    const page = await reportPage(sql, spec({ mode: "per_device" }));
    const byDevice = new Map(page.rows.map((r) => [r.device_id, r]));
    const first = byDevice.get(devices[0]!)!;
    expect(Number(first.events)).toBe(3);
    expect(Number(first["celsius.min"])).toBe(10);
    expect(Number(first["celsius.max"])).toBe(30);
    expect(Number(first["celsius.avg"])).toBeCloseTo((10 + 20.5 + 30) / 3, 6);
    expect(first.site).toBe("Paris");
    const second = byDevice.get(devices[1]!)!;
    expect(Number(second["celsius.min"])).toBe(-5);
    expect(Number(second["celsius.last"])).toBe(40);
    // Device 2: the non-numeric reading counts as an event but not as a value; its last reading has no
    // site, so the last site is the one before.
    const third = byDevice.get(devices[2]!)!;
    expect(Number(third.events)).toBe(2);
    expect([third["celsius.min"], third["celsius.max"], third["celsius.last"]].map(Number)).toEqual([
      25, 25, 25,
    ]);
    expect(third.site).toBe("Oslo");
    expect(new Date(String(third.last_seen)).getTime()).toBe(at(7).getTime());
  });

  test("per_device: a view filter on a time column (last_seen >= the sixth reading)", async () => {
    const page = await reportPage(
      sql,
      spec({ mode: "per_device", viewFilter: { column: "last_seen", op: ">=", value: at(5).toISOString() } }),
    );
    expect(page.rows.map((r) => r.device_id)).toEqual([devices[1]!, devices[2]!].sort());
  });

  test("an unknown view filter or sort column falls back to the mode's default", async () => {
    const all = await rawMatches({
      viewFilter: { column: "nope", op: "=", value: 1 },
      sort: { column: "nope", direction: "asc" },
    });
    expect(all).toEqual(READINGS.map((_, i) => i));
  });

  test("raw: a view filter on a text column with not_contains and <=", async () => {
    const page = await reportPage(
      sql,
      spec({ viewFilter: { column: "site", op: "not_contains", value: "a" } }),
    );
    // An absent site does not contain the text: not_contains keeps it.
    expect(page.rows.map((r) => r.site ?? "-").sort()).toEqual(
      READINGS.map((r) => r.site ?? "-")
        .filter((s) => !s.toLowerCase().includes("a"))
        .sort(),
    );
    const le = await reportPage(sql, spec({ viewFilter: { column: "celsius", op: "<=", value: 10 } }));
    expect(le.rows.map((r) => Number(r.celsius)).sort((a, b) => a - b)).toEqual([-5, 10]);
  });
});

describe("sorting and paging", () => {
  test("raw sorted by celsius ascending, two rows a page, walks every reading once in order", async () => {
    const seen: number[] = [];
    let after: (string | number | null)[] | undefined;
    for (let pageNo = 0; pageNo < 10; pageNo++) {
      const page = await reportPage(
        sql,
        spec({ limit: 2, sort: { column: "celsius", direction: "asc" }, after }),
      );
      seen.push(...page.rows.map((r) => (r.celsius === null ? Number.NaN : Number(r.celsius))));
      after = page.next;
      if (!after) break;
    }
    // Numbers ascending, the reading without a number last (nulls last).
    expect(seen).toEqual([...READINGS.flatMap((r) => celsiusOf(r) ?? []).sort((a, b) => a - b), Number.NaN]);
  });

  test("buckets of an hour: avg/min/max per device and UTC hour", async () => {
    const page = await reportPage(sql, spec({ mode: "buckets", bucketSeconds: 3600 }));
    const events = page.rows.reduce((n, r) => n + Number(r.events), 0);
    expect(events).toBe(READINGS.length);
    for (const row of page.rows) expect(new Date(String(row.bucket)).getUTCMinutes()).toBe(0);
  });

  test("raw default order is newest first, and three-row pages walk it without gap or repeat", async () => {
    const rows = await walk({}, 3);
    expect(rows.map(timeOf)).toEqual(READINGS.map((_, i) => at(i).getTime()).reverse());
  });

  test("raw sorted by celsius descending: numbers high to low, the non-number last", async () => {
    const rows = await walk({ sort: { column: "celsius", direction: "desc" } }, 2);
    const numbers = READINGS.flatMap((r) => celsiusOf(r) ?? []).sort((a, b) => b - a);
    expect(rows.map((r) => r.celsius)).toEqual([...numbers, null]);
  });

  test("raw sorted by site ascending, one row a page: the absent site last", async () => {
    const rows = await walk({ sort: { column: "site", direction: "asc" } }, 1);
    expect(rows.length).toBe(READINGS.length);
    expect(rows[rows.length - 1]!.site).toBeNull();
    expect(new Set(rows.map(timeOf)).size).toBe(READINGS.length);
  });

  test("per_device in device order, one device a page, walks every device once", async () => {
    const rows = await walk({ mode: "per_device" }, 1);
    expect(rows.map((r) => r.device_id)).toEqual(sortedDevices);
  });

  test("per_device sorted by celsius.max descending, one a page", async () => {
    const rows = await walk({ mode: "per_device", sort: { column: "celsius.max", direction: "desc" } }, 1);
    expect(rows.map((r) => [r.device_id, r["celsius.max"]])).toEqual([
      [devices[1]!, 40],
      [devices[0]!, 30],
      [devices[2]!, 25],
    ]);
  });

  test("two-minute buckets, one a page: a device's buckets are split across pages, none lost", async () => {
    const rows = await walk({ mode: "buckets", bucketSeconds: 120 }, 1);
    // Readings at minutes 0,1,2 (device 0), 3,4,5 (device 1), 66,67 (device 2) after the hour.
    const buckets = new Map<string, number>();
    for (const [i, r] of READINGS.entries()) {
      const minute = (at(i).getTime() - start.getTime()) / 60_000;
      const key = `${devices[r.device]}@${Math.floor(minute / 2) * 2}`;
      buckets.set(key, (buckets.get(key) ?? 0) + 1);
    }
    const got = rows.map((r): [string, number] => {
      const minute = (new Date(String(r.bucket)).getTime() - start.getTime()) / 60_000;
      return [`${r.device_id}@${minute}`, Number(r.events)];
    });
    expect(new Map(got)).toEqual(buckets);
    expect(got.length).toBe(buckets.size);
    expect(got.map(([key]) => key.split("@")[0])).toEqual([...got.map(([key]) => key.split("@")[0]!)].sort());
  });

  test("a device scope limits the report to its devices", async () => {
    const scope = sql`select id from devices where mac_address = ${MACS[1]!}`;
    expect(await rawMatches({ deviceScope: scope })).toEqual(expected((r) => r.device === 1));
    const page = await reportPage(sql, spec({ mode: "per_device", deviceScope: scope }));
    expect(page.rows.map((r) => r.device_id)).toEqual([devices[1]!]);
  });

  test("the range includes its start and excludes its end", async () => {
    expect(await rawMatches({ from: at(2), to: at(5) })).toEqual([2, 3, 4]);
  });

  test("two-minute buckets sorted by celsius.avg, one a page: every bucket once, in value order", async () => {
    const rows = await walk(
      { mode: "buckets", bucketSeconds: 120, sort: { column: "celsius.avg", direction: "asc" } },
      1,
    );
    expect(rows.length).toBe(5);
    expect(new Set(rows.map((r) => `${r.device_id}@${r.bucket}`)).size).toBe(5);
    const averages = rows.map((r) => r["celsius.avg"] as number);
    expect(averages).toEqual([...averages].sort((a, b) => a - b));
  });

  test("raw sorted by recorded_at ascending and per_device by last_seen descending, one a page", async () => {
    const raw = await walk({ sort: { column: "recorded_at", direction: "asc" } }, 1);
    expect(raw.map(timeOf)).toEqual(READINGS.map((_, i) => at(i).getTime()));
    const perDevice = await walk({ mode: "per_device", sort: { column: "last_seen", direction: "desc" } }, 1);
    expect(perDevice.map((r) => r.device_id)).toEqual([devices[2]!, devices[1]!, devices[0]!]);
  });
});

describe("columns", () => {
  const typesOf = (columns: { key: string; type: string }[]) => columns.map((c) => `${c.key}:${c.type}`);
  const EXPECTED: Record<ReportQuerySpec["mode"], string[]> = {
    raw: ["device_id:uuid", "recorded_at:time", "celsius:number", "site:text"],
    per_device: [
      "device_id:uuid",
      "events:number",
      "last_seen:time",
      "celsius.last:number",
      "celsius.min:number",
      "celsius.max:number",
      "celsius.avg:number",
      "site:text",
    ],
    // A text field has no statistic per bucket.
    buckets: [
      "device_id:uuid",
      "bucket:time",
      "events:number",
      "celsius.avg:number",
      "celsius.min:number",
      "celsius.max:number",
    ],
  };
  for (const mode of ["raw", "per_device", "buckets"] as const) {
    test(`${mode}: the columns, their types, and values of those types (times as UTC ISO-8601)`, async () => {
      const page = await reportPage(sql, spec({ mode, bucketSeconds: 3600 }));
      expect(typesOf(page.columns)).toEqual(EXPECTED[mode]);
      expect(typesOf(reportColumns({ fields: FIELDS, mode }))).toEqual(EXPECTED[mode]);
      for (const row of page.rows) {
        expect(Object.keys(row)).toEqual(page.columns.map((c) => c.key));
        for (const { key, type } of page.columns) {
          const value = row[key];
          if (value === null) continue;
          if (type === "number") expect(typeof value).toBe("number");
          else expect(typeof value).toBe("string");
          if (type === "time") expect(value).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
          if (type === "uuid") expect(devices).toContain(value as string);
        }
      }
    });
  }
});

describe("paging edges", () => {
  test("a field no reading has sorts as all nulls: one-row pages still walk every reading once", async () => {
    const fields = [...FIELDS, { key: "env.absent", alias: "absent", numeric: true }];
    for (const direction of ["asc", "desc"] as const) {
      const rows = await walk({ fields, sort: { column: "absent", direction } }, 1);
      expect(rows.map((r) => r.absent)).toEqual(READINGS.map(() => null));
      expect(new Set(rows.map(timeOf)).size).toBe(READINGS.length);
    }
  });

  test("a page that holds exactly the last rows has no next page", async () => {
    const all = await reportPage(sql, spec({ limit: READINGS.length }));
    expect(all.rows.length).toBe(READINGS.length);
    expect(all.next).toBeUndefined();
    const perDevice = await reportPage(sql, spec({ mode: "per_device", limit: devices.length }));
    expect([perDevice.rows.length, perDevice.next]).toEqual([devices.length, undefined]);
    const short = await reportPage(sql, spec({ limit: READINGS.length - 1 }));
    expect(short.next).toBeDefined();
  });

  test("no fields at all, or only text fields in buckets: the counts alone", async () => {
    const perDevice = await reportPage(sql, spec({ mode: "per_device", fields: [] }));
    expect(perDevice.rows.map((r) => [r.device_id, r.events])).toEqual(
      sortedDevices.map((id) => [id, READINGS.filter((r) => devices[r.device] === id).length]),
    );
    const textOnly = [FIELDS[1]!];
    const buckets = await reportPage(sql, spec({ mode: "buckets", bucketSeconds: 3600, fields: textOnly }));
    expect(buckets.columns.map((c) => c.key)).toEqual(["device_id", "bucket", "events"]);
    expect(buckets.rows.reduce((n, r) => n + Number(r.events), 0)).toBe(READINGS.length);
    const sortedByEvents = await reportPage(
      sql,
      spec({ mode: "per_device", fields: [], sort: { column: "events", direction: "desc" } }),
    );
    expect(sortedByEvents.rows.map((r) => r.events)).toEqual([3, 3, 2]);
    const raw = await reportPage(sql, spec({ fields: [] }));
    expect(raw.rows.length).toBe(READINGS.length);
  });
});

/**
 * What reportPage asks PostgreSQL for a page in device order: each skip scan (the device it starts
 * after, whether that device is included, how many it takes) and each aggregate (the devices it reads).
 */
async function statementsOf(overrides: Partial<ReportQuerySpec>) {
  const steps: string[] = [];
  const traced = postgres(database.url, {
    max: 1,
    onnotice: () => {},
    debug: (_connection, query, parameters) => {
      const params = parameters as unknown[];
      if (query.includes("with recursive cand")) {
        const after = params.find((p) => typeof p === "string" && devices.includes(p));
        const bound =
          after === undefined
            ? "start"
            : `${query.includes("e.device_id >= $") ? ">=" : ">"} d${devices.indexOf(after as string)}`;
        steps.push(`scan ${bound} take ${params[params.length - 1]}`);
      } else if (query.includes("= any(")) {
        const list = params.find((p) => typeof p === "string" && p.startsWith("{")) as string;
        const ids = list.slice(1, -1).split(",").filter(Boolean);
        steps.push(`aggregate ${ids.map((id) => `d${devices.indexOf(id)}`).join(",") || "none"}`);
      } else if (query.includes("telemetry_events")) steps.push("other"); // not the client's own lookups
    },
  });
  try {
    const page = await reportPage(traced as unknown as typeof sql, spec(overrides));
    return { steps, page };
  } finally {
    await traced.end();
  }
}

describe("device order reads only the devices of its page", () => {
  // Devices in id order, as the pages walk them (d0..d2 name `devices`' indexes).
  const d = (i: number) => `d${devices.indexOf(sortedDevices[i]!)}`;

  test("per_device, two a page: one skip scan and one aggregate of the page's devices and the next", async () => {
    const first = await statementsOf({ mode: "per_device", limit: 2 });
    expect(first.steps).toEqual(["scan start take 3", `aggregate ${d(0)},${d(1)},${d(2)}`]);
    expect(first.page.next).toEqual([sortedDevices[1]!]);
    const second = await statementsOf({ mode: "per_device", limit: 2, after: first.page.next });
    expect(second.steps).toEqual([`scan > ${d(1)} take 3`, `aggregate ${d(2)}`]);
    expect(second.page.next).toBeUndefined();
  });

  test("buckets: two devices, then twice as many, until the page is full or no device is left", async () => {
    const scope = sql`select id from devices where id = any(${`{${sortedDevices.slice(0, 2).join(",")}}`}::uuid[])`;
    const all = await statementsOf({ mode: "buckets", bucketSeconds: 3600, deviceScope: scope });
    expect(all.steps).toEqual(["scan start take 2", `aggregate ${d(0)},${d(1)}`, `scan > ${d(1)} take 4`]);
    expect(all.page.next).toBeUndefined();
  });

  test("buckets, one a page: the next page starts in the device the last one ended in", async () => {
    const first = await statementsOf({ mode: "buckets", bucketSeconds: 120, limit: 1 });
    expect(first.steps).toEqual(["scan start take 2", `aggregate ${d(0)},${d(1)}`]);
    const second = await statementsOf({
      mode: "buckets",
      bucketSeconds: 120,
      limit: 1,
      after: first.page.next,
    });
    expect(second.steps[0]).toBe(`scan >= ${d(0)} take 2`);
  });

  test("sorted by a value: one statement over every device, no skip scan", async () => {
    const sorted = await statementsOf({ mode: "per_device", sort: { column: "events", direction: "asc" } });
    expect(sorted.steps).toEqual(["other"]);
  });
});
