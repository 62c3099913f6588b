// Property: over generated devices in a real database, the SQL the compiler builds selects exactly the
// devices an in-memory reading of the same query selects. Seeded and bounded: 80 devices, 300 queries.
import { beforeAll, expect, test } from "bun:test";
import { compileQuery } from "../../modules/fleet/query/compile";
import { type Condition, parseQuery, type Query } from "../../modules/fleet/query/parse";
import { syncDeclaredLabels } from "../../modules/fleet/service";
import { createTestDatabase } from "../helpers/database";

const SEED = 20261128;
const DEVICES = 80;
const QUERIES = 300;
const WINDOW = 300;

/** mulberry32: a small seeded generator, so a failure repeats. */
function generator(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  return { next, pick, chance: (p: number) => next() < p };
}

interface FakeDevice {
  id: string;
  mac: string;
  product: string | null;
  approval: "pending" | "approved" | "rejected";
  /** Seconds since last seen (null: never), kept far from every threshold the queries use. */
  age: number | null;
  ip: string | null;
  name: string | null;
  hostname: string | null;
  displayName: string | null;
  tags: Record<string, string>;
  labels: Record<string, string>;
}

const KEYS = ["site", "env", "hw.rev"];
const VALUES = ["berlin", "munich", "lab", "prod", ""];

function fakeDevices(rand: ReturnType<typeof generator>): FakeDevice[] {
  const labelsOf = () => {
    const set: Record<string, string> = {};
    for (const key of KEYS) if (rand.chance(0.35)) set[key] = rand.pick(VALUES);
    return set;
  };
  return Array.from({ length: DEVICES }, (_, i) => ({
    id: crypto.randomUUID(),
    mac: `02:00:00:00:${(i >> 8).toString(16).padStart(2, "0")}:${(i & 255).toString(16).padStart(2, "0")}`.toUpperCase(),
    product: rand.pick(["gateway", "sensor", "edge gw", null]),
    approval: rand.pick(["pending", "approved", "rejected"] as const),
    age: rand.pick([null, 10, 200, 2000, 40_000, 200_000]),
    ip: rand.pick([null, "10.0.0.7", "192.168.1.20", "10.0.1.1"]),
    name: rand.pick([null, "pump-1", "Pump 7", "valve_a_b", "100%"]),
    hostname: rand.pick([null, "berlin-gw", "lab7"]),
    displayName: rand.pick([null, null, "Berlin pump", "Lab Box"]),
    tags: labelsOf(),
    labels: labelsOf(),
  }));
}

function randomTerm(rand: ReturnType<typeof generator>): string {
  const kind = rand.pick(["tag", "status", "approval", "product", "last_seen", "text"] as const);
  const one = (): string => {
    switch (kind) {
      case "tag": {
        const key = rand.pick(KEYS);
        const value = () => {
          const v = rand.pick(VALUES);
          return v === "" ? '""' : v;
        };
        return rand.chance(0.25)
          ? `tag:${key}`
          : rand.chance(0.3)
            ? `tag:${key}=${value()},${value()}`
            : `tag:${key}=${value()}`;
      }
      case "status":
        return `status:${rand.pick(["online", "offline"])}`;
      case "approval":
        return `approval:${rand.pick(["pending", "approved", "rejected"])}`;
      case "product":
        return `product:${rand.pick(["gateway", "sensor", '"edge gw"', "nothing"])}`;
      case "last_seen":
        return `last_seen:${rand.pick([">1m", "<5m", ">1h", "<1d", ">3d", "never"])}`;
      case "text":
        return rand.pick([
          "pump",
          '"pump 7"',
          "ber",
          "7",
          "10.0.0",
          "a_b",
          "%",
          "lab",
          "0200",
          "02:00:00:00:00:0a",
          "device",
          "device-0200",
          "ice-02000000000a",
        ]);
    }
  };
  const alternatives = rand.chance(0.2) ? [one(), one()] : [one()];
  if (alternatives.length === 1 && rand.chance(0.25)) return `-${alternatives[0]}`;
  return alternatives.join(" OR ");
}

/** The query's meaning, read without SQL. */
function matches(device: FakeDevice, query: Query): boolean {
  const searchText = [
    device.mac,
    device.mac.replaceAll(":", ""),
    device.product ?? "",
    device.ip ?? "",
    device.name ?? "",
    device.hostname ?? "",
  ]
    .join(" ")
    .toLowerCase();
  const holds = (c: Condition): boolean => {
    switch (c.kind) {
      case "tag":
        return [device.tags, device.labels].some(
          (set) => c.key in set && (c.values === null || c.values.includes(set[c.key]!)),
        );
      case "status":
        return (device.age !== null && device.age <= WINDOW) === (c.value === "online");
      case "approval":
        return device.approval === c.value;
      case "product":
        return device.product === c.value;
      case "last_seen":
        return c.older
          ? device.age === null || device.age > c.seconds
          : device.age !== null && device.age <= c.seconds;
      case "never_seen":
        return device.age === null;
      case "text": {
        const text = c.text.toLowerCase();
        // The name it is shown by when it has none: derived from its MAC.
        const derived =
          device.displayName === null && !device.name
            ? `device-${device.mac.replaceAll(":", "").toLowerCase()}`
            : "";
        return (
          searchText.includes(text) ||
          (device.displayName ?? "").toLowerCase().includes(text) ||
          derived.includes(text)
        );
      }
    }
  };
  return query.terms.every((term) => term.anyOf.some(holds) !== term.negated);
}

const database = await createTestDatabase();
const rand = generator(SEED);
const devices = fakeDevices(rand);

beforeAll(async () => {
  const sql = database.sql;
  for (const d of devices) {
    const metadata = { ...(d.name ? { name: d.name } : {}), ...(d.hostname ? { hostname: d.hostname } : {}) };
    await sql`
      insert into devices (id, mac_address, product_name, approval_status, last_seen_at, ipv4_address,
        metadata, labels, display_name)
      values (${d.id}, ${d.mac}, ${d.product}, ${d.approval}::device_approval_status,
        case when ${d.age}::int is null then null else now() - make_interval(secs => ${d.age}::int) end,
        ${d.ip}, ${JSON.stringify(metadata)}::jsonb, ${JSON.stringify(d.labels)}::jsonb, ${d.displayName})`;
    for (const [key, value] of Object.entries(d.tags))
      await sql`insert into device_tags (device_id, key, value) values (${d.id}, ${key}, ${value})`;
    // As a registration declaring them does (the registration route's labelsDeclared hook).
    await syncDeclaredLabels(sql, d.id, d.labels);
  }
});

test(`the compiled SQL selects what the in-memory filter selects (${QUERIES} seeded queries)`, async () => {
  const sql = database.sql;
  const mismatches: { query: string; onlyInSql: string[]; onlyInMemory: string[] }[] = [];
  let nonTrivial = 0;
  for (let i = 0; i < QUERIES; i++) {
    const terms = Array.from({ length: 1 + Math.floor(rand.next() * 3) }, () => randomTerm(rand));
    const text = terms.join(" ");
    const query = parseQuery(text);
    const rows = await sql<{ mac_address: string }[]>`
      select d.mac_address from devices d where ${compileQuery(sql, query, { onlineWindowSeconds: WINDOW })}`;
    const fromSql = new Set(rows.map((r) => r.mac_address));
    const inMemory = new Set(devices.filter((d) => matches(d, query)).map((d) => d.mac));
    if (inMemory.size > 0 && inMemory.size < DEVICES) nonTrivial++;
    const onlyInSql = [...fromSql].filter((m) => !inMemory.has(m));
    const onlyInMemory = [...inMemory].filter((m) => !fromSql.has(m));
    if (onlyInSql.length || onlyInMemory.length) mismatches.push({ query: text, onlyInSql, onlyInMemory });
  }
  expect(mismatches.slice(0, 5)).toEqual([]);
  // The generator is worth something only when most queries split the fleet.
  expect(nonTrivial).toBeGreaterThan(QUERIES / 2);
}, 120_000);

test("a device id as free text finds that device", async () => {
  const sql = database.sql;
  const target = devices[3]!;
  const rows = await sql<{ id: string }[]>`
    select d.id from devices d where ${compileQuery(sql, parseQuery(target.id.toUpperCase()), { onlineWindowSeconds: WINDOW })}`;
  expect(rows.map((r) => r.id)).toEqual([target.id]);
});

test("free text matches the MAC-derived name of a device shown by it (table)", async () => {
  const sql = database.sql;
  const mac = (last: string) => `0A:1B:2C:3D:4E:${last}`;
  const [plain, reported, displayed] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
  await sql`insert into devices (id, mac_address, metadata, display_name) values
    (${plain}, ${mac("5F")}, '{}'::jsonb, null),
    (${reported}, ${mac("60")}, '{"name": "pump-9"}'::jsonb, null),
    (${displayed}, ${mac("61")}, '{}'::jsonb, 'Lab box')`;
  const names = new Map<string, string>([
    [plain, "plain"],
    [reported, "reported"],
    [displayed, "displayed"],
  ]);
  const cases: [string, string[]][] = [
    ["device-0a1b2c3d4e5f", ["plain"]],
    ['"DEVICE-0A1B2C"', ["plain"]],
    ["ice-0a1b", ["plain"]],
    ['"-0a1b2c3d4e5f"', ["plain"]],
    ["e-", ["plain"]],
    ["device", ["plain"]],
    ["vic", ["plain"]],
    // Shown by another name: the derived one is not theirs to match (their MAC still is).
    ["device-0a1b2c3d4e60", []],
    ["device-0a1b2c3d4e61", []],
    ["0a1b2c3d4e6", ["displayed", "reported"]],
    ["pump-9", ["reported"]],
    // Not a derived name: too many digits, not hex, digits that do not start the MAC.
    ["device-0a1b2c3d4e5f0", []],
    ["device-0a1b2c3d4e5g", []],
    ["vice-1b2c", []],
    ["devices", []],
  ];
  try {
    const got = [];
    for (const [text] of cases) {
      const rows = await sql<{ id: string }[]>`
        select d.id from devices d where d.id = any(${[...names.keys()]}::uuid[])
          and ${compileQuery(sql, parseQuery(text), { onlineWindowSeconds: WINDOW })}`;
      got.push([text, rows.map((r) => names.get(r.id)!).sort()]);
    }
    expect(got).toEqual(cases);
  } finally {
    await sql`delete from devices where id = any(${[...names.keys()]}::uuid[])`;
  }
});

test("a query without terms selects every device", async () => {
  const sql = database.sql;
  const rows = await sql<{ count: number }[]>`
    select count(*)::int as count from devices d where ${compileQuery(sql, parseQuery("  "), { onlineWindowSeconds: WINDOW })}`;
  expect(rows[0]!.count).toBe(DEVICES);
});
