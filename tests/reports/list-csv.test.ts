// CSV for other lists: the device list (its filters and sort), job runs and a device's commands, streamed through
// modules/platform/csv.ts like reports.
import { describe, expect, test } from "bun:test";
import { queueCommand } from "../../modules/commands/service";
import { approvedDevice, register } from "../devices/helpers";
import { startTestApp } from "../helpers/app";

const app = await startTestApp();
const viewer = { authorization: `Bearer ${await app.token("viewer")}` };

for (let i = 0; i < 3; i++)
  await register(app, { product_name: "csv-kiosk", metadata: { name: `=kiosk-${i}` } });
await register(app, { product_name: "other" });

describe("list CSV exports", () => {
  test("/devices.csv honours the list's filters and sort, neutralises formulas", async () => {
    const response = await app.fetch("/devices.csv?product=csv-kiosk&sort=mac_address&order=asc", {
      headers: viewer,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-disposition")).toStartWith('attachment; filename="devices-');
    const lines = (await response.text()).trimEnd().split("\r\n");
    expect(lines[0]).toBe(
      "id,mac_address,name,product_name,approval_status,online,last_seen_at,ipv4_address,created_at",
    );
    expect(lines.length).toBe(4);
    const macs = lines.slice(1).map((l) => l.split(",")[1]!);
    expect(macs).toEqual([...macs].sort());
    expect(lines.slice(1).every((l) => /,'=kiosk-\d,csv-kiosk,pending,false,,/.test(l))).toBe(true);
    expect((await app.fetch("/devices.csv")).status).toBe(303); // to sign-in, as every page
    // The list's Export CSV button carries the list's filters.
    const session = await app.session("viewer");
    const page = await (await app.fetch("/devices?product=csv-kiosk", { headers: { cookie: session.cookie } })).text();
    expect(page).toContain('href="/devices.csv?product=csv-kiosk"');
  });

  test("/jobs/runs.csv lists every run newest first, by task", async () => {
    const sql = app.database.sql;
    await sql`insert into job_runs (job_id, task_identifier, attempt, status, started_at, error)
      select 'j' || i, case when i % 2 = 0 then 'even_task' else 'odd_task' end, 1, 'failed',
        now() - make_interval(secs => i), '@SUM(1+1)'
      from generate_series(1, 2500) i`;
    const all = (await (await app.fetch("/jobs/runs.csv", { headers: viewer })).text())
      .trimEnd()
      .split("\r\n");
    expect(all[0]).toBe("id,task,status,attempt,started_at,finished_at,duration_ms,worker_id,error");
    expect(all.length).toBeGreaterThanOrEqual(2501);
    const even = (await (await app.fetch("/jobs/runs.csv?task=even_task", { headers: viewer })).text())
      .trimEnd()
      .split("\r\n")
      .slice(1);
    expect(even.length).toBe(1250);
    expect(even.every((l) => l.includes(",even_task,failed,1,") && l.endsWith(",'@SUM(1+1)"))).toBe(true);
    const times = even.map((l) => l.split(",")[4]!);
    expect(times).toEqual([...times].sort().reverse());
    const page = await (await app.fetch("/jobs", { headers: viewer })).text();
    expect(page).toContain('href="/jobs/runs.csv"');
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
    expect(lines[0]).toBe("id,type,script,status,queued_at,delivered_at,completed_at,queued_by,error");
    expect(lines.slice(1).map((l) => l.split(",")[2])).toEqual(["fan-2", "fan-1", "fan-0"]);
    expect(lines.every((l) => !l.includes("list_scripts"))).toBe(true);
    expect((await app.fetch(`/devices/${crypto.randomUUID()}/commands.csv`, { headers: viewer })).status).toBe(200);
  });
});
