// The agent's side of the tunnel data plane (agent/tunnel-work.ts) against small stand-in servers: the
// work pool's back-off, warnings and stop, which requests connect a target, and the protocol's pieces.
import { afterAll, describe, expect, test } from "bun:test";
import { createPrivateKey, X509Certificate } from "node:crypto";
import net from "node:net";
import tls from "node:tls";
import { WORK_POOL_SIZE, WorkPool } from "../../agent/tunnel-work";
import { selfSignedCertificate } from "../../modules/remote-access/tunnel/certificate";
import { LineTimeout, readLine, workProof } from "../../shared/tunnel-work";
import { startTestApp } from "../helpers/app";
import { TestClock } from "../helpers/clock";
import { deviceWithLease, startDeviceWeb, waitFor } from "./helpers";

const app = await startTestApp({ BASE_DOMAIN: "remote.test" });
const operator = await app.token("operator");
const web = startDeviceWeb("A");
afterAll(() => web.stop());

const parts = (token: string) => token.split(".") as [string, string];

/**
 * A stand-in data server: `mode()` says per connection whether it proves the device's key (`prove`:
 * answers `OK <proof>` and stays idle) or hangs up at once (`refuse`). `open` holds its live sockets.
 */
async function standIn(key: string, mode: () => "prove" | "refuse") {
  const open = new Set<tls.TLSSocket>();
  let accepted = 0;
  const server = tls.createServer(selfSignedCertificate("stand-in"), (socket) => {
    accepted++;
    socket.on("error", () => {});
    if (mode() === "refuse") return socket.destroy();
    open.add(socket);
    socket.on("close", () => open.delete(socket));
    readLine(socket, 5000).then(
      () => socket.write(`OK ${workProof(key, "server", socket)}\n`),
      () => socket.destroy(),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    open,
    accepted: () => accepted,
    close: () => server.close(),
  };
}

describe("the agent's work pool", () => {
  test("the agent backs off from a data port that refuses (0.5 s, 1 s, 2 s …) and says so once", async () => {
    const a = await deviceWithLease(app, operator);
    const refusing = await standIn(parts(a.reply.remote_access_token)[1], () => "refuse");
    const warnings: unknown[] = [];
    const clock = new TestClock({ frozen: true });
    const pool = new WorkPool({
      host: "127.0.0.1",
      port: refusing.port,
      token: () => a.reply.remote_access_token,
      openTarget: () => net.connect(web.port, "127.0.0.1"),
      logger: { warn: (obj) => warnings.push(obj) },
      clock,
    });
    /** `accepted` connections refused so far, and the pool's next try armed `delayMs` on. */
    const refusedThenWaits = (accepted: number, delayMs: number) =>
      waitFor(
        () => refusing.accepted() === accepted && clock.armed(delayMs) === 1,
        5000,
        `${accepted} refused, then a ${delayMs} ms back-off`,
      );
    pool.start();
    // Four at once, again after 0.5 s, after 1 s more, then not before 2 s more (the pool's clock).
    await refusedThenWaits(WORK_POOL_SIZE, 500);
    await clock.advance(499);
    expect(refusing.accepted()).toBe(WORK_POOL_SIZE);
    await clock.advance(1);
    await refusedThenWaits(2 * WORK_POOL_SIZE, 1000);
    await clock.advance(1000);
    await refusedThenWaits(3 * WORK_POOL_SIZE, 2000);
    await clock.advance(1999);
    expect(refusing.accepted()).toBe(3 * WORK_POOL_SIZE);
    pool.stop();
    expect(clock.pending).toBe(0); // the back-off's next try is called off
    refusing.close();
    expect(warnings).toHaveLength(1);
  });

  test("the agent connects a target only for a proven server's exact OPEN, and nothing without a token", async () => {
    const a = await deviceWithLease(app, operator);
    const [, key] = parts(a.reply.remote_access_token);
    const requests = ["OPEN httpx", "XOPEN http", "OPEN web", "", "OPEN ssh"];
    const asked: string[] = [];
    const server = tls.createServer(selfSignedCertificate("proven"), (socket) => {
      socket.on("error", () => {});
      readLine(socket, 5000).then(
        () => socket.write(`OK ${workProof(key, "server", socket)}\n${requests.shift() ?? "OPEN http"}\n`),
        () => socket.destroy(),
      );
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as net.AddressInfo).port;
    const pool = (token: () => string | undefined) =>
      new WorkPool({
        host: "127.0.0.1",
        port,
        token,
        openTarget: (forward) => {
          asked.push(forward);
          return net.connect(web.port, "127.0.0.1");
        },
        logger: { warn() {} },
      });
    const tokenless = pool(() => undefined);
    tokenless.start();
    await Bun.sleep(300);
    tokenless.stop();
    expect(asked).toEqual([]);
    const proven = pool(() => a.reply.remote_access_token);
    proven.start();
    await waitFor(() => asked.length >= 1, 5000, "a target connected");
    await Bun.sleep(200);
    proven.stop();
    server.close();
    // The four malformed requests connected nothing; the exact ones did, each for its own target.
    expect(asked[0]).toBe("ssh");
    expect(asked.slice(1).every((forward) => forward === "http")).toBe(true);
  });

  test("stopped, the pool closes its work connections and opens no more", async () => {
    const a = await deviceWithLease(app, operator);
    const [, key] = parts(a.reply.remote_access_token);
    const server = await standIn(key, () => "prove");
    const pool = new WorkPool({
      host: "127.0.0.1",
      port: server.port,
      token: () => a.reply.remote_access_token,
      openTarget: () => net.connect(web.port, "127.0.0.1"),
      logger: { warn() {} },
    });
    pool.start();
    await waitFor(() => pool.idleCount === WORK_POOL_SIZE, 5000, "the pool's idle connections");
    pool.stop();
    await waitFor(() => server.open.size === 0, 3000, "the pool's connections closed");
    await Bun.sleep(700); // a refill or a back-off step would have connected again by now
    expect(server.accepted()).toBe(WORK_POOL_SIZE);
    server.close();
  });

  test("it warns once per streak of failures: again after a success, never for a proven server hanging up", async () => {
    const a = await deviceWithLease(app, operator);
    const [, key] = parts(a.reply.remote_access_token);
    let mode: "prove" | "refuse" = "refuse";
    const server = await standIn(key, () => mode);
    const warnings: unknown[] = [];
    const pool = new WorkPool({
      host: "127.0.0.1",
      port: server.port,
      token: () => a.reply.remote_access_token,
      openTarget: () => net.connect(web.port, "127.0.0.1"),
      logger: { warn: (obj) => warnings.push(obj) },
    });
    pool.start();
    await waitFor(() => warnings.length === 1, 3000, "the first streak's warning");
    mode = "prove";
    await waitFor(() => pool.idleCount === WORK_POOL_SIZE, 5000, "the pool's idle connections");
    // A proven server dropping idle connections is not a failure: they are replaced, silently.
    const before = server.accepted();
    for (const socket of server.open) socket.destroy();
    await waitFor(
      () => server.accepted() === before + WORK_POOL_SIZE && pool.idleCount === WORK_POOL_SIZE,
      5000,
      "the four replaced",
    );
    await Bun.sleep(100);
    expect(warnings).toHaveLength(1);
    // A new streak after that success is reported again.
    mode = "refuse";
    for (const socket of server.open) socket.destroy();
    await waitFor(() => warnings.length === 2, 3000, "the second streak's warning");
    pool.stop();
    server.close();
  });
});

describe("data plane pieces", () => {
  test("readLine hands over the bytes after the line, refuses an over-long one, and times out", async () => {
    const server = net.createServer((socket) => {
      socket.write("OK\nbanner bytes");
      socket.on("data", () => {});
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as net.AddressInfo).port;
    const socket = net.connect(port, "127.0.0.1");
    expect(await readLine(socket, 2000)).toBe("OK");
    const rest = await new Promise<string>((r) => socket.once("data", (c: Buffer) => r(c.toString())));
    expect(rest).toBe("banner bytes");
    socket.destroy();

    // A line in pieces, and an empty one.
    const pieces = net.createServer((s) => {
      s.write("OPE");
      setTimeout(() => s.write("N http\n\nafter"), 50);
    });
    await new Promise<void>((r) => pieces.listen(0, "127.0.0.1", () => r()));
    const split = net.connect((pieces.address() as net.AddressInfo).port, "127.0.0.1");
    expect(await readLine(split, 2000)).toBe("OPEN http");
    expect(await readLine(split, 2000)).toBe("");
    split.destroy();
    pieces.close();

    // 2 KiB without a newline yet is still a line in the making.
    const edge = net.createServer((s) => {
      s.write("y".repeat(2048));
      setTimeout(() => s.write("\n"), 50);
    });
    await new Promise<void>((r) => edge.listen(0, "127.0.0.1", () => r()));
    const atLimit = net.connect((edge.address() as net.AddressInfo).port, "127.0.0.1");
    expect(await readLine(atLimit, 2000)).toBe("y".repeat(2048));
    atLimit.destroy();
    edge.close();

    const long = net.createServer((s) => s.write("x".repeat(3000)));
    await new Promise<void>((r) => long.listen(0, "127.0.0.1", () => r()));
    const flooded = net.connect((long.address() as net.AddressInfo).port, "127.0.0.1");
    await expect(readLine(flooded, 2000)).rejects.toThrow("line too long");
    flooded.destroy();

    const silent = net.connect(port, "127.0.0.1");
    await readLine(silent, 2000); // "OK"
    silent.read();
    await expect(readLine(silent, 100)).rejects.toBeInstanceOf(LineTimeout);
    silent.destroy();
    server.close();
    long.close();
  });

  test("the throwaway certificate is a valid self-signed P-256 certificate for ten years", () => {
    const { key, cert } = selfSignedCertificate("outpost-tunnel-data");
    const parsed = new X509Certificate(cert);
    expect(parsed.subject).toBe("CN=outpost-tunnel-data");
    expect(parsed.verify(parsed.publicKey)).toBe(true);
    expect(parsed.checkPrivateKey(createPrivateKey(key))).toBe(true);
    expect(parsed.publicKey.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
    expect(Date.parse(parsed.validFrom)).toBeLessThan(Date.now());
    expect(Date.parse(parsed.validTo)).toBeGreaterThan(Date.now() + 9 * 365 * 86_400_000);
  });
});
