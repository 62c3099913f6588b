// CSV for the other lists: the device list (its search, filters and sort), job runs, E2E runs (the
// page's filters and order) and a device's commands, streamed through modules/platform/csv.ts like
// reports, each linked from its page.
import { describe, expect, test } from "bun:test";
import { queueCommand } from "../../modules/commands/service";
import { approvedDevice, register } from "../devices/helpers";
import { startE2EApp, writeE2EFixture } from "../e2e/fixtures";

const app = await startE2EApp(writeE2EFixture());
const viewer = { authorization: `Bearer ${await app.token("viewer")}` };
const sql = app.database.sql;

const kiosks: string[] = [];
for (let i = 0; i < 3; i++)
  kiosks.push(
    (await register(app, { product_name: "csv-kiosk", metadata: { name: `=kiosk-${i}` } })).body.data.id,
  );
await register(app, { product_name: "other" });

/** The CSV's lines without the final CRLF, and the filename it is offered under. */
async function csv(pathname: string): Promise<{ lines: string[]; disposition: string }> {
  const response = await app.fetch(pathname, { headers: viewer });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toStartWith("text/csv");
  return {
    lines: (await response.text()).trimEnd().split("\r\n"),
    disposition: response.headers.get("content-disposition") ?? "",
  };
}
const csvLines = async (pathname: string) => (await csv(pathname)).lines;

const page = async (pathname: string) => (await app.fetch(pathname, { headers: viewer })).text();

describe("list CSV exports", () => {
  test("/devices.csv honours the list's filters and sort, neutralises formulas", async () => {
    const { lines, disposition } = await csv("/devices.csv?product=csv-kiosk&sort=mac_address&order=asc");
    expect(disposition).toStartWith('attachment; filename="devices-');
    expect(lines[0]).toBe(
      "id,mac_address,name,product_name,approval_status,online,last_seen_at,ipv4_address,created_at",
    );
    expect(lines.length).toBe(4);
    const macs = lines.slice(1).map((l) => l.split(",")[1]!);
    expect(macs).toEqual([...macs].sort());
    expect(lines.slice(1).every((l) => /,'=kiosk-\d,csv-kiosk,pending,false,,/.test(l))).toBe(true);
    expect((await app.fetch("/devices.csv")).status).toBe(303); // to sign-in, as every page
    // The list's Export CSV button carries the list's filters.
    expect(await page("/devices?product=csv-kiosk")).toContain('href="/devices.csv?product=csv-kiosk"');
  });

  test("/devices.csv is what the list shows: its search (names too) and name sort, on every page", async () => {
    // The console's search reads names; the name sort is the console's own.
    const named = await csvLines("/devices.csv?search=kiosk-1");
    expect(named.slice(1).map((l) => l.split(",")[0])).toEqual([kiosks[1]]);
    const byName = await csvLines("/devices.csv?product=csv-kiosk&sort=name&order=desc");
    expect(byName.slice(1).map((l) => l.split(",")[2])).toEqual(["'=kiosk-2", "'=kiosk-1", "'=kiosk-0"]);
    // More devices than one batch (200): every one, once, in the list's default order (newest first).
    await sql`insert into devices (mac_address, product_name, created_at)
      select upper('02:CC:00:00:' || lpad(to_hex(i / 256), 2, '0') || ':' || lpad(to_hex(i % 256), 2, '0')),
        'bulk', now() - make_interval(secs => i % 7)
      from generate_series(1, 450) i`;
    const bulk = (await csvLines("/devices.csv?product=bulk")).slice(1);
    expect(bulk.length).toBe(450);
    expect(new Set(bulk.map((l) => l.split(",")[0])).size).toBe(450);
    const created = bulk.map((l) => l.split(",")[8]!);
    expect(created).toEqual([...created].sort().reverse());
    // The list links the CSV of its current query, in the part htmx swaps on search.
    const html = await page("/devices?product=csv-kiosk&sort=name");
    expect(html).toContain('href="/devices.csv?product=csv-kiosk&sort=name"');
    const fragment = await (
      await app.fetch("/devices?search=kiosk", {
        headers: { ...viewer, "hx-request": "true", "hx-target": "device-results" },
      })
    ).text();
    expect(fragment).toContain('href="/devices.csv?search=kiosk"');
  });

  test("/jobs/runs.csv lists every run newest first, by task", async () => {
    await sql`insert into job_runs (job_id, task_identifier, attempt, status, started_at, error)
      select 'j' || i, case when i % 2 = 0 then 'even_task' else 'odd_task' end, 1, 'failed',
        now() - make_interval(secs => i), '@SUM(1+1)'
      from generate_series(1, 2500) i`;
    const all = await csvLines("/jobs/runs.csv");
    expect(all[0]).toBe("id,task,status,attempt,started_at,finished_at,duration_ms,worker_id,error");
    expect(all.length).toBeGreaterThanOrEqual(2501);
    const even = (await csvLines("/jobs/runs.csv?task=even_task")).slice(1);
    expect(even.length).toBe(1250);
    expect(even.every((l) => l.includes(",even_task,failed,1,") && l.endsWith(",'@SUM(1+1)"))).toBe(true);
    const times = even.map((l) => l.split(",")[4]!);
    expect(times).toEqual([...times].sort().reverse());
    expect(await page("/jobs")).toContain('href="/jobs/runs.csv"');
  });

  test("/e2e.csv holds every run the page's filters match, in its order (nulls last), across batches", async () => {
    // 900 finished runs over two suites and 400 without an end: batches of 500 cross from ends to
    // no ends within the second one, so the third continues after a run without an end.
    await sql`insert into e2e_runs (suite_id, journey_ids, environment_label, trigger_source,
        protocol_version, runner_id, status, started_at, finished_at)
      select case when i % 3 = 0 then 'three' else 'smoke' end, array['dashboard'], 'plain',
        case when i % 2 = 0 then 'ci' else 'manual' end, '1', '=runner', 'passed',
        timestamptz '2026-01-01' + make_interval(secs => i),
        case when i > 900 then null else timestamptz '2026-01-01' + make_interval(secs => i + (i % 5) * 60) end
      from generate_series(1, 1300) i`;
    const all = await csvLines("/e2e.csv");
    expect(all[0]).toBe(
      "id,suite_id,environment_label,trigger_source,status,started_at,finished_at,journeys,runner_id,journeys_passed,journeys_failed,duration_ms",
    );
    const rows = all.slice(1).map((l) => l.split(","));
    expect(rows.length).toBe(1300);
    expect(new Set(rows.map((r) => r[0])).size).toBe(1300);
    // The page's default order: newest start first; runner ids that look like formulas are text.
    const started = rows.map((r) => r[5]!);
    expect(started).toEqual([...started].sort().reverse());
    expect(rows.every((r) => r[7] === "dashboard" && r[8] === "'=runner" && r[9] === "0")).toBe(true);
    expect(rows.find((r) => r[6] !== "")?.[11]).toMatch(/^\d+$/);

    // Sorted by end, ascending: ends in order, then the 400 unfinished, each once.
    const byEnd = (await csvLines("/e2e.csv?sort=finished_at&dir=asc")).slice(1).map((l) => l.split(","));
    expect(byEnd.length).toBe(1300);
    expect(new Set(byEnd.map((r) => r[0])).size).toBe(1300);
    const ends = byEnd.slice(0, 900).map((r) => r[6]!);
    expect(ends.every((e) => e !== "")).toBe(true);
    expect(ends).toEqual([...ends].sort());
    expect(byEnd.slice(900).every((r) => r[6] === "" && r[11] === "")).toBe(true);
    const byEndDesc = (await csvLines("/e2e.csv?sort=finished_at")).slice(1).map((l) => l.split(","));
    expect(new Set(byEndDesc.map((r) => r[0])).size).toBe(1300);
    expect(byEndDesc.slice(900).every((r) => r[6] === "")).toBe(true);
    expect(byEndDesc.slice(0, 900).map((r) => r[6])).toEqual([...ends].reverse());

    // The filters and the search, as on the page.
    const three = (await csvLines("/e2e.csv?suite=three&trigger=ci")).slice(1);
    expect(three.length).toBe(216); // i % 6 = 0 up to 1300
    expect(three.every((l) => l.split(",")[1] === "three" && l.split(",")[3] === "ci")).toBe(true);
    const id = rows[42]![0]!;
    expect((await csvLines(`/e2e.csv?q=${id}`)).slice(1).map((l) => l.split(",")[0])).toEqual([id]);

    // The runs table links the CSV of the page's query (not its page number).
    const html = await page("/e2e?suite=three&sort=finished_at&dir=asc&page=2");
    expect(html).toContain('href="/e2e.csv?suite=three&sort=finished_at&dir=asc"');
    expect((await app.fetch("/e2e.csv")).status).toBe(303);
  });

  test("/devices/:id/commands.csv holds every command of the device, newest first", async () => {
    const [device, other] = kiosks as [string, string];
    await sql`insert into pending_commands (device_id, type, args, payload, status, queued_at, expires_at,
        completed_at, output, error, queued_by)
      select ${device}::uuid, case when i % 2 = 0 then 'list_scripts' else 'install_script' end::command_type,
        '["-l", "a,b"]'::jsonb,
        case when i % 2 = 0 then null else jsonb_build_object('name', 'probe-' || i) end,
        case when i % 3 = 0 then 'failed' else 'succeeded' end::command_status,
        timestamptz '2026-01-01' + make_interval(secs => i), now() + interval '1 day', now(),
        case when i % 3 = 0 then null else '{"ok": true, "text": "x,\\"y\\""}'::jsonb end,
        case when i % 3 = 0 then '=HYPERLINK("x")' end, 'ops@example.test'
      from generate_series(1, 1100) i`;
    await sql`insert into pending_commands (device_id, type, expires_at)
      values (${other}::uuid, 'list_scripts', now() + interval '1 day')`;

    const { lines, disposition } = await csv(`/devices/${device}/commands.csv`);
    expect(disposition).toContain('filename="commands-_kiosk-0-');
    expect(lines[0]).toBe(
      "id,type,script,status,queued_at,delivered_at,completed_at,queued_by,error,args,expires_at,output",
    );
    expect(lines.length).toBe(1101);
    expect(new Set(lines.slice(1).map((l) => l.split(",")[0])).size).toBe(1100);
    const queued = lines.slice(1).map((l) => l.split(",")[4]!);
    expect(queued.every((q) => /^2026-01-01T/.test(q))).toBe(true);
    expect(queued).toEqual([...queued].sort().reverse());
    // i = 1100 (newest): list_scripts, succeeded, JSON output quoted; i = 1099: install of probe-1099.
    expect(lines[1]).toMatch(
      /^[\w-]+,list_scripts,,succeeded,2026-01-01T00:18:20\.000Z,,[^,]+,ops@example\.test,,"\[""-l"",""a,b""\]",[^,]+,/,
    );
    expect(lines[1]).toEndWith(`,"{""ok"":true,""text"":""x,\\""y\\""""}"`);
    expect(lines[2]).toContain(",install_script,probe-1099,");
    // i = 1098: failed, its error neutralised.
    expect(lines[3]).toContain(`,failed,`);
    expect(lines[3]).toContain(`,ops@example.test,"'=HYPERLINK(""x"")","[""-l""`);
    expect(lines[3]).toEndWith(",");

    const tab = await page(`/devices/${device}?tab=commands`);
    expect(tab).toContain(`href="/devices/${device}/commands.csv"`);
    expect(
      (await app.fetch(`/devices/${crypto.randomUUID()}/commands.csv`, { headers: viewer })).status,
    ).toBe(404);
    expect((await app.fetch(`/devices/${device}/commands.csv`)).status).toBe(303);
  });

  test("/devices/:id/commands.csv: the whole history of one device, newest first, script names", async () => {
    const device = await approvedDevice(app);
    for (let i = 0; i < 3; i++)
      await queueCommand(app.database.sql, {
        deviceId: device.id,
        type: "remove_script",
        args: [`fan-${i}`],
        payload: { name: `fan-${i}` },
        ttlSeconds: 600,
      });
    const other = await approvedDevice(app);
    await queueCommand(app.database.sql, { deviceId: other.id, type: "list_scripts", ttlSeconds: 600 });
    const response = await app.fetch(`/devices/${device.id}/commands.csv`, { headers: viewer });
    expect(response.status).toBe(200);
    const lines = (await response.text()).trimEnd().split("\r\n");
    expect(lines.slice(1).map((l) => l.split(",")[2])).toEqual(["fan-2", "fan-1", "fan-0"]);
    expect(lines.every((l) => !l.includes("list_scripts"))).toBe(true);
  });
});
