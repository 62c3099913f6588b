// The multiplexer (modules/remote-access/tunnel/mux.ts) and a tunnel's forwards: the registry holds a
// tunnel from its login, and the agent asks for its forwards a few milliseconds later. A CONNECT in that
// gap waits for the forward instead of a 403 for a port about to be offered (it made
// tests/cli/forward.test.ts fail about one run in eight); a port still not offered once the tunnel has
// settled is refused at once. Service level: the real multiplexer server on loopback, a tunnel whose
// SSH client refuses every channel, so a stream that got past the forward check answers 502.
import { afterAll, describe, expect, test } from "bun:test";
import net from "node:net";
import type { Connection } from "ssh2";
import { createLogger } from "../../modules/platform/logger";
import { deviceHost } from "../../modules/remote-access/hosts";
import { signCredential } from "../../modules/remote-access/token";
import { WorkConnections } from "../../modules/remote-access/tunnel/data-plane";
import { createMuxServer, FORWARDS_SETTLE_MS } from "../../modules/remote-access/tunnel/mux";
import { type DeviceTunnel, TunnelRegistry } from "../../modules/remote-access/tunnel/registry";

const SECRET = "s".repeat(64);
const DOMAIN = "mux-settle.test";
const registry = new TunnelRegistry();
const server = createMuxServer({
  secretKey: SECRET,
  baseDomain: DOMAIN,
  registry,
  logger: createLogger("silent"),
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = (server.address() as net.AddressInfo).port;
afterAll(() => server.close());

function tunnel(deviceId: string, connectedAt: Date): DeviceTunnel {
  const refusing = {
    forwardOut: (_bind: string, _port: number, _host: string, _from: number, done: (e: Error) => void) =>
      done(new Error("channel refused")),
  } as unknown as Connection;
  const value: DeviceTunnel = {
    deviceId,
    client: refusing,
    forwards: new Map(),
    work: new WorkConnections(),
    connectedAt,
    tokenExpiresAt: Date.now() + 3_600_000,
    close: () => registry.delete(value),
  };
  registry.set(value);
  return value;
}

/** CONNECT to the device's port through the multiplexer: the status of its answer and when it came. */
function connect(deviceId: string, devicePort: number): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const credential = signCredential(SECRET, "mux", { d: deviceId, exp: Math.floor(Date.now() / 1000) + 60 });
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () =>
      socket.write(
        `CONNECT ${deviceHost(deviceId, DOMAIN)}:${devicePort} HTTP/1.1\r\n` +
          `Proxy-Authorization: Bearer ${credential}\r\n\r\n`,
      ),
    );
    socket.setTimeout(10_000, () => reject(new Error("no answer")));
    socket.once("data", (chunk) => {
      resolve({ status: Number(chunk.toString().split(" ")[1]), ms: performance.now() - started });
      socket.destroy();
    });
    socket.once("error", reject);
  });
}

describe("a port the device forwards, asked for just after its tunnel logged in", () => {
  test("waits for the agent's forward request instead of a 403", async () => {
    const device = tunnel(crypto.randomUUID(), new Date());
    const answer = connect(device.deviceId, 5900);
    await Bun.sleep(100);
    device.forwards.set("tcp:5900", 5900);
    // Past the forward check: the (refusing) SSH channel answers.
    expect((await answer).status).toBe(502);
  });

  test("a port not offered is refused once the tunnel has settled, and at once on a settled tunnel", async () => {
    const fresh = tunnel(crypto.randomUUID(), new Date());
    const waited = await connect(fresh.deviceId, 5901);
    expect(waited.status).toBe(403);
    expect(waited.ms).toBeLessThan(FORWARDS_SETTLE_MS + 1000);
    const settled = tunnel(crypto.randomUUID(), new Date(Date.now() - FORWARDS_SETTLE_MS - 1000));
    const atOnce = await connect(settled.deviceId, 5901);
    expect(atOnce.status).toBe(403);
    expect(atOnce.ms).toBeLessThan(500);
  });
});
