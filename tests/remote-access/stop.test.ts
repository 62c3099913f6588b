// Stopping the tunnel role while a multiplexer stream is held half-open (what a web process's terminal
// session can leave once the device's side ended): close() waited for it, so `./outpost start` hung on
// Ctrl-C after terminal sessions until a second one (seen running bench:terminal). Stop now ends what is
// still open after a short grace.
import { afterAll, describe, expect, test } from "bun:test";
import net from "node:net";
import { signCredential } from "../../modules/remote-access/token";
import { CLOSE_GRACE_MS } from "../../modules/remote-access/tunnel";
import { startTestApp } from "../helpers/app";
import { connectTunnel, deviceWithLease, tunnelClient } from "./helpers";

const DOMAIN = "remote.test";
const app = await startTestApp({ BASE_DOMAIN: DOMAIN });
const tunnel = app.running.tunnel!;
const echo = net.createServer((s) => s.pipe(s)).listen(0, "127.0.0.1");
const echoPort = await new Promise<number>((r) =>
  echo.once("listening", () => r((echo.address() as net.AddressInfo).port)),
);
const client = tunnelClient(app, "http://127.0.0.1:9", `127.0.0.1:${echoPort}`);
afterAll(async () => {
  await client.stop();
  echo.close();
  await app.stop();
});

/** A CONNECT through the multiplexer to the device's ssh target (here an echo server), answered 200. */
async function openStream(deviceId: string, host: string): Promise<net.Socket> {
  const credential = signCredential(app.config.secretKey, "mux", {
    d: deviceId,
    exp: Math.floor(Date.now() / 1000) + 60,
  });
  // Half-open allowed, as an SSH client's socket may be: the device side ending does not end it.
  const socket = net.connect({ port: tunnel.muxPort, host: "127.0.0.1", allowHalfOpen: true });
  socket.on("error", () => {});
  await new Promise((r) => socket.once("connect", r));
  socket.write(`CONNECT ${host}:22 HTTP/1.1\r\nProxy-Authorization: Bearer ${credential}\r\n\r\n`);
  const head = await new Promise<string>((resolve) =>
    socket.once("data", (d: Buffer) => resolve(d.toString())),
  );
  expect(head).toMatch(/^HTTP\/1\.1 200/);
  socket.write("ping");
  expect(
    await new Promise<string>((resolve) => socket.once("data", (d: Buffer) => resolve(d.toString()))),
  ).toBe("ping");
  return socket;
}

describe("stopping the tunnel role", () => {
  test("an open multiplexer stream does not hold it: stop ends it after the grace and returns", async () => {
    const device = await deviceWithLease(app, await app.token("operator"));
    await connectTunnel(client, device.reply);
    const stream = await openStream(device.id, `dev-${device.hex}.${DOMAIN}`);
    const ended = new Promise<void>((resolve) => stream.once("end", () => resolve()));
    let closed = false;
    stream.once("close", () => (closed = true));
    const stopped = tunnel.stop().then(() => "stopped");
    // Within the grace the half-open stream is left to finish; once it has passed (on the app's clock),
    // the tunnel process closes it.
    await app.clock.advance(CLOSE_GRACE_MS - 100);
    expect(closed).toBe(false);
    await app.clock.advance(100);
    const outcome = await Promise.race([stopped, Bun.sleep(10_000).then(() => "hung")]);
    expect(outcome).toBe("stopped");
    await ended;
  }, 30_000);
});
