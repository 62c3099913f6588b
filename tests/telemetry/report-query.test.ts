// The report query builder at the service, over telemetry the agent's own scripts produced: every
// comparison operator on numbers, text, device ids and times, on events (filters) and on output columns
// (the detail page's view filter). Each operator is checked against the same predicate computed in
// JavaScript over the same readings, so a mis-compiled operator (`!=` as `=`) fails here.
import { describe, expect, test } from "bun:test";
import { type CompareOp, type ReportQuerySpec, reportPage } from "../../modules/telemetry/report-query";
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

/** What the devices' scripts reported, in arrival order: celsius (a numeric string once) and site. */
const READINGS: { device: 0 | 1; celsius: number | string; site: string }[] = [
  { device: 0, celsius: 10, site: "Berlin" },
  { device: 0, celsius: 20.5, site: "berlin-north" },
  { device: 0, celsius: 30, site: "Paris" },
  { device: 1, celsius: "20.5", site: "Köln 100%_" },
  { device: 1, celsius: -5, site: "paris" },
  { device: 1, celsius: 40, site: "Lyon" },
];
const start = new Date(Date.now() - 60 * 60_000);
const at = (i: number) => new Date(start.getTime() + i * 60_000);

const devices: string[] = [];
for (const mac of ["02:00:00:00:d0:01", "02:00:00:00:d0:02"]) {
  const [row] = await sql<{ id: string }[]>`insert into devices (mac_address, approval_status, product_name)
    values (${mac}, 'approved', 'sensor') returning id::text`;
  devices.push(row!.id);
}
for (const [i, r] of READINGS.entries()) {
  const body = await agent.heartbeat(devices[r.device]!, { env: { celsius: r.celsius, site: r.site } });
  await recordTelemetry(sql, devices[r.device]!, storedPayload(body), at(i));
}

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

describe("report filters on events", () => {
  for (const [op, holds] of NUMBER_OPS) {
    test(`number ${op} 20.5 (a numeric string counts as its number)`, async () => {
      const got = await rawMatches({
        filters: [{ target: { key: "env.celsius", numeric: true }, op, value: 20.5 }],
      });
      expect(got).toEqual(expected((r) => holds(Number(r.celsius), 20.5)));
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
      expect(got).toEqual(expected((r) => holds(r.site)));
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
      expected((r) => r.device === 0),
    );
  });

  test("recorded_at < and >= split the events at a time", async () => {
    const target = { column: "recorded_at" } as const;
    const cut = at(3).toISOString();
    expect(await rawMatches({ filters: [{ target, op: "<", value: cut }] })).toEqual([0, 1, 2]);
    expect(await rawMatches({ filters: [{ target, op: ">=", value: cut }] })).toEqual([3, 4, 5]);
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
    expect(ne.rows.map((r) => r.device_id)).toEqual([devices[1]!]);
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
  });

  test("raw: a view filter on a text column with not_contains and <=", async () => {
    const page = await reportPage(
      sql,
      spec({ viewFilter: { column: "site", op: "not_contains", value: "a" } }),
    );
    expect(page.rows.map((r) => r.site).sort()).toEqual(
      READINGS.map((r) => r.site)
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
      seen.push(...page.rows.map((r) => Number(r.celsius)));
      after = page.next;
      if (!after) break;
    }
    expect(seen).toEqual(READINGS.map((r) => Number(r.celsius)).sort((a, b) => a - b));
  });

  test("buckets of an hour: avg/min/max per device and UTC hour", async () => {
    const page = await reportPage(sql, spec({ mode: "buckets", bucketSeconds: 3600 }));
    const events = page.rows.reduce((n, r) => n + Number(r.events), 0);
    expect(events).toBe(READINGS.length);
    for (const row of page.rows) expect(new Date(String(row.bucket)).getUTCMinutes()).toBe(0);
  });
});
