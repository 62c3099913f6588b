// The operator's-own-terminal doors (`outpost ssh`, `outpost forward`) take an API token only: a signed-in
// browser session, even an operator's with its CSRF token, is refused (403 token_required) and starts
// nothing. The console opens terminals through its own route, which asks for a fresh second factor when
// the operator's role wants one; these doors must not be a way around it.
import { afterAll, describe, expect, test } from "bun:test";
import { approvedDevice } from "../console/helpers";
import { startTestApp } from "../helpers/app";
import { operatorSession } from "../helpers/sessions";

const app = await startTestApp({ OUTPOST_ROLE: "web" });
afterAll(() => app.stop());

describe("token-only routes", () => {
  test("a browser session is refused with token_required; no terminal session, no lease", async () => {
    const device = await approvedDevice(app);
    const session = await operatorSession(app.database.db, app.config.secretKey, "operator");
    const headers = {
      cookie: session.cookie,
      "x-csrf-token": session.csrf,
      "content-type": "application/json",
      accept: "application/json",
    };
    for (const [path, body] of [
      [`/api/v1/devices/${device.id}/terminal`, {}],
      [`/api/v1/devices/${device.id}/forwards`, { port: 5900 }],
    ] as const) {
      const response = await app.fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
      expect({ path, status: response.status }).toEqual({ path, status: 403 });
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("token_required");
    }
    const [sessions] = await app.database.sql<{ n: number }[]>`
      select count(*)::int as n from terminal_sessions where device_id = ${device.id}::uuid`;
    const [leases] = await app.database.sql<{ n: number }[]>`
      select count(*)::int as n from remote_access_leases where device_id = ${device.id}::uuid`;
    expect({ sessions: sessions!.n, leases: leases!.n }).toEqual({ sessions: 0, leases: 0 });
  });
});
