// The recorder writes after the answer: a clean stop waits for the audit writes under way (bounded)
// before it closes the database, so a request answered just before the stop is still recorded.
import { describe, expect, test } from "bun:test";
import { form, startTestApp } from "../helpers/app";

const app = await startTestApp();
const sql = app.database.sql;

describe("a clean stop", () => {
  test("waits for an audit write held up by a lock; the answered request is recorded", async () => {
    const admin = await app.session("admin");
    // A form refused before its access check ran: the recorder resolves the caller after the answer
    // (reading operator_sessions), then inserts. Hold a lock that read needs, so the write is still
    // under way when stop() begins.
    const blocker = await sql.reserve();
    await blocker`begin`;
    await blocker`lock table operator_sessions in access exclusive mode`;
    const refused = await app.fetch(
      "/settings/tokens",
      form({ _csrf: admin.csrf, name: "ci\u0000deploy", role: "viewer" }, { cookie: admin.cookie }),
    );
    expect(refused.status).toBe(400);

    let stoppedAt: number | undefined;
    const stopping = app.running.stop().then(() => {
      stoppedAt = Date.now();
    });
    await Bun.sleep(1000);
    expect(stoppedAt).toBeUndefined(); // still waiting for the write
    const releasedAt = Date.now();
    await blocker`commit`;
    blocker.release();
    await stopping;
    expect(stoppedAt!).toBeGreaterThanOrEqual(releasedAt);

    const rows = await sql`
      select 1 from audit_events where action = 'token.create' and status = 400 and actor = ${admin.email}`;
    expect(rows.count).toBe(1);
  }, 30_000);
});
