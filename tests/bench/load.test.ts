import { expect, test } from "bun:test";
import { heartbeatBodyText } from "../../bench/heartbeat/body";
import { FleetLoad } from "../../bench/heartbeat/load";

/** bench:heartbeat --web-processes N: the callers are spread evenly over the N servers. */
test("callers are spread evenly over several servers, each heartbeat answered", async () => {
  const served = [0, 0, 0];
  const servers = served.map((_, i) =>
    Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async (request) => {
        await request.text();
        served[i]!++;
        return Response.json({ data: { commands: [] } });
      },
    }),
  );
  try {
    const devices = [{ id: "00000000-0000-4000-8000-000000000001", mac: "02:00:00:00:00:01", token: "t" }];
    const statuses: (number | undefined)[] = [];
    let answered = 0;
    await new FleetLoad(devices, heartbeatBodyText()).callers(
      6,
      servers.map((server) => `http://127.0.0.1:${server.port}`),
      () => answered >= 60,
      (status) => {
        answered++;
        statuses.push(status);
      },
    );
    expect(statuses.every((status) => status === 200)).toBe(true);
    // Two callers per server, one heartbeat in flight each: every server answers a third, give or take.
    for (const count of served) expect(count).toBeGreaterThanOrEqual(10);
    expect(served.reduce((sum, count) => sum + count, 0)).toBe(statuses.length);
  } finally {
    for (const server of servers) server.stop(true);
  }
});
