// The Jobs page with work waiting in the queue: its times are read as dates (raw postgres.js hands
// them back as text), and the row shows what waits and when it runs.
import { afterAll, expect, test } from "bun:test";
import { enqueueJob } from "../../modules/jobs/queue";
import { startTestApp } from "../helpers/app";

const app = await startTestApp({ OUTPOST_ROLE: "web" }); // no worker: the job stays queued
afterAll(() => app.stop());

test("a queued job is listed with its task and run time", async () => {
  const runAt = new Date(Date.now() + 3 * 3600_000);
  const id = await enqueueJob(app.database.sql, "prune_sessions", {}, { runAt });
  const admin = await app.session("admin");
  const response = await app.fetch("/jobs", { headers: { cookie: admin.cookie } });
  expect(response.status).toBe(200);
  const html = await response.text();
  expect(html).toContain(`>${id}</td>`);
  expect(html).toContain(`datetime="${runAt.toISOString()}"`);
});
