// `outpost forward` against a real server, a real agent (its tunnel.forward_ports from the environment)
// and a TCP echo server on the device's side: bytes both ways with a half-close, a refused port, the
// audit of the forward and of each connection, and the lease released on Ctrl-C.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import net from "node:net";
import { WORK_POOL_SIZE } from "../../agent/tunnel-work";
import { openForward } from "../../modules/remote-access/tunnel/stream";
import { startTestApp } from "../helpers/app";
import { startDevice, type TestDevice, waitFor, waitForFirstHeartbeat } from "../terminal/helpers";
import { cliHome, OUTPOST } from "./helpers";

let device: TestDevice;
let echo: net.Server | undefined;
// Hooks run in the order registered: the agent, its sshd and the echo server end before the app stops
// (the app's own hook, registered by startTestApp), so no forward or tunnel of theirs is open then.
afterAll(async () => {
  if (device) await device.stop(); // unset when the set-up failed before it
  echo?.close();
});
const app = await startTestApp({ BASE_DOMAIN: "fwd.test" });
const home = cliHome();
let token: string;

/** The device's TCP service: echoes every byte and ends when its client has ended. */
echo = net.createServer({ allowHalfOpen: true }, (socket) => {
  socket.on("error", () => {});
  socket.pipe(socket);
});
await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
const echoPort = (echo.address() as net.AddressInfo).port;
/** A port the agent does not list (nothing listens there either). */
const unlistedPort = echoPort === 65000 ? 65001 : 65000;

beforeAll(async () => {
  device = await startDevice(app, { settings: { "tunnel.forward_ports": `${echoPort},4840` } });
  const id = device.id;
  await waitForFirstHeartbeat(app.database.sql, id);
  token = await app.token("operator");
});

/** `outpost forward` running in the background: its listening address once it printed it. */
async function startForward(ports: string) {
  const child = Bun.spawn([OUTPOST, "forward", device.id, ports], {
    env: home.env({ OUTPOST_URL: app.url, OUTPOST_API_TOKEN: token }),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let stderr = "";
  const reader = (async () => {
    const decoder = new TextDecoder();
    const stream = child.stderr.getReader();
    for (let i = 0; i < 100_000; i++) {
      const { done, value } = await stream.read();
      if (done) break;
      stderr += decoder.decode(value, { stream: true });
    }
  })();
  const address = await waitFor(
    () =>
      /Forwarding (127\.0\.0\.1:\d+) →/.exec(stderr)?.[1] ?? (child.exitCode !== null ? "exited" : undefined),
    30_000,
    "the forward to listen",
  );
  return { child, address, stderr: () => stderr, reader };
}

/** Sends `payload` through the forward, half-closes, and resolves with everything that came back. */
function roundTrip(address: string, payload: Buffer): Promise<Buffer> {
  const [host, port] = address.split(":");
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port: Number(port), allowHalfOpen: true });
    const chunks: Buffer[] = [];
    const timer = setTimeout(
      () => reject(new Error(`no full echo in time (${Buffer.concat(chunks).length} bytes)`)),
      30_000,
    );
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("end", () => {
      clearTimeout(timer);
      socket.end();
      resolve(Buffer.concat(chunks));
    });
    socket.on("error", reject);
    socket.end(payload);
  });
}

const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("outpost forward", () => {
  test("carries bytes both ways to a device port its agent offers; audited; Ctrl-C closes the lease", async () => {
    const forward = await startForward(`0:${echoPort}`);
    expect(forward.address).not.toBe("exited");
    const payload = randomBytes(1024 * 1024);
    const first = await roundTrip(forward.address, payload);
    expect({ length: first.length, sha: sha(first) }).toEqual({ length: payload.length, sha: sha(payload) });
    // Several connections at once, each its own stream.
    const small = await Promise.all(
      [1, 2, 3].map((n) => roundTrip(forward.address, Buffer.from(`hello ${n}`))),
    );
    expect(small.map(String)).toEqual(["hello 1", "hello 2", "hello 3"]);

    const [lease] = await app.database.sql<{ id: string; ended_at: Date | null; holder: string }[]>`
      select id, ended_at, holder from remote_access_leases where device_id = ${device.id} order by created_at desc limit 1`;
    expect(lease!.ended_at).toBeNull();
    expect(lease!.holder).toContain(`(forward to port ${echoPort})`);

    forward.child.kill("SIGINT");
    expect(await forward.child.exited).toBe(0);
    const [ended] = await app.database.sql<{ end_reason: string }[]>`
      select end_reason from remote_access_leases where id = ${lease!.id}`;
    expect(ended!.end_reason).toBe("closed");
    const audit = await waitFor(
      async () => {
        const rows = await app.database.sql<
          { action: string; actor_kind: string; details: Record<string, unknown> }[]
        >`
          select action, actor_kind, details from audit_events
          where action like 'forward.%' order by at`;
        return rows.filter((r) => r.action === "forward.connection").length >= 4 ? rows : undefined;
      },
      10_000,
      "the forward's audit",
    );
    expect(audit[0]).toMatchObject({
      action: "forward.open",
      actor_kind: "token",
      details: { port: echoPort },
    });
    expect(audit.filter((r) => r.action === "forward.close").length).toBe(1);
    const big = audit.find(
      (r) => r.action === "forward.connection" && r.details.bytes_to_device === payload.length,
    );
    expect(big?.details).toMatchObject({
      port: echoPort,
      bytes_from_device: payload.length,
      device_id: device.id,
    });
  }, 120_000);

  test("half-close over an SSH channel (no work connection free): EOF reaches the device's service and its answer still comes back", async () => {
    const forward = await startForward(`0:${echoPort}`);
    try {
      await roundTrip(forward.address, Buffer.from("up"));
      const tunnel = app.running.tunnel!.registry.get(device.id)!;
      await waitFor(
        () => tunnel.work.idleCount === WORK_POOL_SIZE,
        10_000,
        "the agent's idle work connections",
      );
      // Taken and held here: the agent does not know, so it opens no others and streams go over SSH
      // channels, as with the data port blocked.
      const taken = Array.from({ length: WORK_POOL_SIZE }, () => tunnel.work.take());
      try {
        // The echo server ends only once it read the client's end; a big answer is still in flight then.
        for (let round = 0; round < 3; round++) {
          const payload = randomBytes(512 * 1024);
          const echoed = await roundTrip(forward.address, payload);
          expect({ length: echoed.length, sha: sha(echoed) }).toEqual({
            length: payload.length,
            sha: sha(payload),
          });
        }
        expect(tunnel.work.idleCount).toBe(0); // no work connection carried them
      } finally {
        for (const socket of taken) socket?.destroy();
      }
    } finally {
      forward.child.kill("SIGINT");
      await forward.child.exited;
    }
  }, 120_000);

  test("a port the agent does not offer is refused, early when the tunnel is up, and by the tunnel otherwise", async () => {
    // While a forward holds the tunnel up, the server knows the agent's ports and refuses at once.
    const holder = await startForward(`0:${echoPort}`);
    await roundTrip(holder.address, Buffer.from("up"));
    const refused = await home.run(["forward", device.id, `0:${unlistedPort}`], {
      env: { OUTPOST_URL: app.url, OUTPOST_API_TOKEN: token },
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`The device does not forward port ${unlistedPort}`);
    expect(refused.stderr).toContain(
      `tunnel.forward_ports: 4840, ${echoPort}`.replace(`4840, ${echoPort}`, ""),
    ); // listed below
    expect(refused.stderr).toMatch(new RegExp(`forward_ports: (${echoPort}, 4840|4840, ${echoPort})`));
    // The multiplexer refuses the same port for a connection that gets that far.
    const mux = await new Promise<string>((resolve) => {
      const socket = net.connect(app.running.tunnel!.muxPort, "127.0.0.1", () =>
        socket.write(`CONNECT dev-${device.id.replace(/-/g, "")}.fwd.test:${unlistedPort} HTTP/1.1\r\n\r\n`),
      );
      socket.once("data", (chunk) => {
        resolve(chunk.toString().split("\r\n")[0]!);
        socket.destroy();
      });
    });
    expect(mux).toBe("HTTP/1.1 407 Proxy Authentication Required");
    holder.child.kill("SIGINT");
    expect(await holder.child.exited).toBe(0);
  }, 120_000);

  test("the agent connects only the ports it lists, whatever the tunnel server asks", async () => {
    // A service on the device the agent does not list: a server that asked for it anyway (forged here in
    // the tunnel's registry) gets a refusal on a work connection and on an SSH channel alike.
    let reached = 0;
    const unlisted = net.createServer((socket) => {
      reached++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => unlisted.listen(0, "127.0.0.1", resolve));
    const port = (unlisted.address() as net.AddressInfo).port;
    const holder = await startForward(`0:${echoPort}`);
    try {
      await roundTrip(holder.address, Buffer.from("up"));
      const tunnel = app.running.tunnel!.registry.get(device.id)!;
      expect(tunnel.forwards.has(`tcp:${echoPort}`)).toBe(true);
      tunnel.forwards.set(`tcp:${port}`, port);
      await expect(openForward(tunnel, `tcp:${port}`)).rejects.toThrow();
      await expect(openForward(tunnel, `tcp:${port}`)).rejects.toThrow();
      tunnel.forwards.delete(`tcp:${port}`);
      expect(reached).toBe(0);
      // The listed port still opens.
      const stream = await openForward(tunnel, `tcp:${echoPort}`);
      stream.destroy();
    } finally {
      holder.child.kill("SIGINT");
      await holder.child.exited;
      unlisted.close();
    }
  }, 120_000);

  test("clear errors: a bad port spec, a local port in use", async () => {
    const env = { env: { OUTPOST_URL: app.url, OUTPOST_API_TOKEN: token } };
    const bad = await home.run(["forward", device.id, "5900:99999"], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('"5900:99999" is not <local-port>:<device-port>');
    const busy = await home.run(["forward", device.id, `${echoPort}:${echoPort}`], env);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain(`127.0.0.1:${echoPort} is in use`);
  }, 60_000);
});
