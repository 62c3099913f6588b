// A device started on a test app (its agent, with the tunnel up, and its sshd) stops before the app,
// whichever afterAll hook runs first: CI once waited out a hook's 60 s limit on an app stopping while
// its agent still held the tunnel and a forward open (tests/cli/forward.test.ts, 8b0c211).
import { expect, test } from "bun:test";
import net from "node:net";
import { startTestApp } from "../helpers/app";
import { startDevice, waitFor, waitForFirstHeartbeat } from "./helpers";

const app = await startTestApp({ BASE_DOMAIN: "stop.test" });

/** Whether something accepts TCP connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

test("the app's stop stops the devices started on it first, then itself, once", async () => {
  // Runs after the device's stop (the last named runs first) and before the app's own.
  const seen: { agentExited: boolean; sshdUp: boolean; appAnswered: number }[] = [];
  app.stopsFirst(async () => {
    seen.push({
      agentExited: device.agent.exitCode !== null || device.agent.signalCode !== null,
      sshdUp: await listening(device.sshdPort),
      appAnswered: (await app.fetch("/healthz")).status,
    });
  });
  const device = await startDevice(app);
  const id = device.id;
  await waitForFirstHeartbeat(app.database.sql, id);
  // A terminal session holds a lease: the agent brings its tunnel up, as in the hook that hung.
  const started = await app.fetch(`/api/v1/devices/${id}/terminal`, {
    method: "POST",
    headers: { authorization: `Bearer ${await app.token("operator")}` },
  });
  expect(started.status).toBe(201);
  await waitFor(() => app.running.tunnel!.registry.get(id), 20_000, "the device's tunnel");
  await Promise.all([app.stop(), app.stop()]);
  expect(seen).toEqual([{ agentExited: true, sshdUp: false, appAnswered: 200 }]);
}, 120_000);
