// Prometheus metrics over real HTTP: never public by default, a bearer token on the main port or a
// separate listener; the scraped values follow what happens (requests by route template, heartbeats,
// commands, jobs, devices, queue depth, E2E runs).
import { afterAll, describe, expect, test } from "bun:test";
import { queueCommand } from "../../modules/commands/service";
import { approveDevices } from "../../modules/devices/service";
import { enqueueJob } from "../../modules/jobs/queue";
import { approvedDevice, heartbeatUrl, json, register, sampleHeartbeat } from "../devices/helpers";
import { startTestApp } from "../helpers/app";

const TOKEN = "metrics-token-0123456789abcdef";
const app = await startTestApp({ METRICS_TOKEN: TOKEN, OUTPOST_ROLE: "web" });
afterAll(() => app.stop());

/** The scrape parsed into `name{labels}` → value. */
async function scrape(
  headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` },
  base = app.url,
) {
  const response = await fetch(`${base}/metrics`, { headers });
  const text = await response.text();
  const values = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const cut = line.lastIndexOf(" ");
    values.set(
      line
        .slice(0, cut)
        .replace(/,?service="outpost"/, "")
        .replace("{}", ""),
      Number(line.slice(cut + 1)),
    );
  }
  return { status: response.status, type: response.headers.get("content-type"), text, values };
}
const value = (values: Map<string, number>, key: string) => values.get(key) ?? 0;

describe("access", () => {
  test("the main port needs the bearer token: 401 without or with a wrong one", async () => {
    expect((await scrape({})).status).toBe(401);
    expect((await scrape({ authorization: "Bearer wrong-token-0123456789" })).status).toBe(401);
    const ok = await scrape();
    expect(ok.status).toBe(200);
    expect(ok.type).toContain("text/plain");
    expect(ok.text).toContain("# TYPE outpost_http_request_duration_seconds histogram");
  });

  test("without METRICS_TOKEN there are no metrics on the main port (404)", async () => {
    const plain = await startTestApp({ OUTPOST_ROLE: "web" });
    try {
      expect((await plain.fetch("/metrics")).status).toBe(404);
      expect((await plain.fetch("/metrics", { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(
        404,
      );
    } finally {
      await plain.stop();
    }
  });

  test("METRICS_PORT: a separate listener without a token; the main port has none", async () => {
    const separate = await startTestApp({ OUTPOST_ROLE: "web", METRICS_PORT: "0", METRICS_TOKEN: TOKEN });
    try {
      const port = separate.running.metricsPort!;
      expect(port).toBeGreaterThan(0);
      const scraped = await scrape({}, `http://127.0.0.1:${port}`);
      expect(scraped.status).toBe(200);
      expect(scraped.text).toContain("outpost_devices");
      expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);
      expect(
        (await separate.fetch("/metrics", { headers: { authorization: `Bearer ${TOKEN}` } })).status,
      ).toBe(404);
    } finally {
      await separate.stop();
    }
  });
});

describe("values follow what happens", () => {
  test("requests are counted by route template and status, never by raw path", async () => {
    const device = await approvedDevice(app);
    const admin = await app.token("admin");
    await app.fetch(`/api/json/devices/${device.id}`, { headers: { authorization: `Bearer ${admin}` } });
    await app.fetch(`/api/json/devices/${crypto.randomUUID()}`, {
      headers: { authorization: `Bearer ${admin}` },
    });
    const { values, text } = await scrape();
    expect(
      value(
        values,
        'outpost_http_request_duration_seconds_count{method="GET",route="/api/json/devices/:id",status="200"}',
      ),
    ).toBeGreaterThanOrEqual(1);
    expect(
      value(
        values,
        'outpost_http_request_duration_seconds_count{method="GET",route="/api/json/devices/:id",status="404"}',
      ),
    ).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain(device.id);
  });

  test("a redirect or a page with its own status counts with the status sent; unknown paths as unmatched 404", async () => {
    const before = (await scrape()).values;
    expect((await app.fetch("/devices")).status).toBe(303); // anonymous: to the sign-in page
    expect((await app.fetch(`/no-such-page-${crypto.randomUUID()}`)).status).toBe(404);
    const after = (await scrape()).values;
    const moved = (key: string) => value(after, key) - value(before, key);
    expect(
      moved('outpost_http_request_duration_seconds_count{method="GET",route="/devices",status="303"}'),
    ).toBe(1);
    expect(
      moved('outpost_http_request_duration_seconds_count{method="GET",route="unmatched",status="404"}'),
    ).toBe(1);
  });

  test("heartbeats accepted and refused, commands queued, delivered, succeeded", async () => {
    const before = (await scrape()).values;
    const device = await approvedDevice(app);
    const command = await queueCommand(app.database.sql, {
      deviceId: device.id,
      type: "list_scripts",
      ttlSeconds: 600,
    });
    expect((await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()))).status).toBe(
      200,
    );
    expect((await app.fetch(heartbeatUrl(device.id, "wrong"), json(sampleHeartbeat()))).status).toBe(401);
    const results = await app.fetch(
      `/api/v1/devices/${device.id}/command_results?api_key=${device.token}`,
      json({ results: [{ command_id: command.id, status: "OK", output: { scripts: [] } }] }),
    );
    expect(results.status).toBe(202);
    const after = (await scrape()).values;
    const delta = (key: string) => value(after, key) - value(before, key);
    expect(delta('outpost_heartbeats_total{result="accepted"}')).toBe(1);
    expect(delta('outpost_heartbeats_total{result="refused_401"}')).toBe(1);
    expect(delta('outpost_commands_total{event="queued"}')).toBe(1);
    expect(delta('outpost_commands_total{event="delivered"}')).toBe(1);
    expect(delta('outpost_commands_total{event="succeeded"}')).toBe(1);
  });

  test("fleet, queue and E2E gauges are read at scrape time", async () => {
    const before = (await scrape()).values;
    const pending = await register(app);
    const approved = await register(app);
    await approveDevices(app.database.sql, [approved.body.data.id]);
    await enqueueJob(app.database.sql, "prune_sessions", {}, { runAt: new Date(Date.now() + 3_600_000) });
    const after = (await scrape()).values;
    const delta = (key: string) => value(after, key) - value(before, key);
    expect(pending.response.status).toBe(201);
    expect(delta('outpost_devices{approval="pending"}')).toBe(1);
    expect(delta('outpost_devices{approval="approved"}')).toBe(1);
    expect(delta('outpost_devices_connectivity{state="offline"}')).toBe(1);
    expect(delta('outpost_job_queue_depth{task="prune_sessions"}')).toBe(1);
    expect(value(after, 'outpost_process_memory_bytes{kind="rss"}')).toBeGreaterThan(10_000_000);
    expect(value(after, "outpost_db_pool_max")).toBeGreaterThan(0);
    expect([...after.keys()].some((key) => key.startsWith("outpost_db_connections{"))).toBe(true);
  });

  test("job executions are timed by task and outcome (worker role)", async () => {
    const worker = await startTestApp({ METRICS_TOKEN: TOKEN });
    try {
      await enqueueJob(worker.database.sql, "prune_sessions", {});
      const deadline = Date.now() + 15_000;
      let count = 0;
      while (count === 0 && Date.now() < deadline) {
        await Bun.sleep(200);
        count = value(
          (await scrape(undefined, worker.url)).values,
          'outpost_job_duration_seconds_count{task="prune_sessions",status="succeeded"}',
        );
      }
      expect(count).toBeGreaterThanOrEqual(1);
    } finally {
      await worker.stop();
    }
  }, 30_000);

  test("the event loop's delay is sampled: a loop blocked for 150 ms shows as a sample over 100 ms", async () => {
    const COUNT = "outpost_event_loop_delay_seconds_count";
    /** Samples later than `seconds` (one of the histogram's bucket bounds). */
    const lateBy = (values: Map<string, number>, seconds: string) =>
      value(values, COUNT) - value(values, `outpost_event_loop_delay_seconds_bucket{le="${seconds}"}`);
    const before = (await scrape()).values;
    await Bun.sleep(400); // idle: a sample every ~25 ms, none of them half a second late
    const idle = (await scrape()).values;
    expect(value(idle, COUNT) - value(before, COUNT)).toBeGreaterThanOrEqual(8);
    expect(lateBy(idle, "0.5")).toBe(lateBy(before, "0.5"));
    // The app runs in this process, so blocking the test's loop blocks the app's.
    const until = performance.now() + 150;
    while (performance.now() < until) {}
    await Bun.sleep(30);
    const blocked = (await scrape()).values;
    expect(lateBy(blocked, "0.1") - lateBy(idle, "0.1")).toBeGreaterThanOrEqual(1);
  });
});
