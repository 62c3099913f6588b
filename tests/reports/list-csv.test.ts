// CSV for other lists: the device list (its filters and sort) and job runs, streamed through
// modules/platform/csv.ts like reports.
import { describe, expect, test } from "bun:test";
import { register } from "../devices/helpers";
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
});
