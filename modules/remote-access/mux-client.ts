import net from "node:net";
import type { Sql } from "postgres";
import { deviceHost } from "./hosts";
import { signCredential } from "./token";
import { muxFor } from "./tunnel/instances";

/** Where a process reaches the tunnel role's TCP multiplexer. */
export interface MuxAddress {
  host: string;
  port: number;
}

/**
 * How a process finds the multiplexer serving a device: the one of the tunnel process holding the
 * device's tunnel (`tunnel_instances`), else any live tunnel process's, else `fallback`
 * (TUNNEL_MUX_HOST/PORT, or this process's own).
 */
export interface MuxRoute {
  sql: Sql;
  fallback: MuxAddress;
}

/**
 * Why a stream to a device could not open: `device_not_connected` (no tunnel, 502),
 * `device_not_answering` (504), `port_not_forwardable` (403: the agent does not offer it),
 * `tunnel_unreachable`, `tunnel_timeout`, `tunnel_refused`.
 */
export class MuxError extends Error {
  constructor(
    readonly code: string,
    detail: string,
  ) {
    super(detail);
    this.name = "MuxError";
  }
}

const CONNECT_TIMEOUT_MS = 10_000;
/** The device brings its tunnel up right after its lease opened (or its key was authorized): wait this long. */
const TUNNEL_WAIT_MS = 20_000;
const TUNNEL_RETRY_MS = 250;
const STATUS_CODES: Record<number, string> = {
  403: "port_not_forwardable",
  502: "device_not_connected",
  504: "device_not_answering",
};

/**
 * `CONNECT dev-<hex>.<BASE_DOMAIN>:<port>` on the multiplexer with a one-minute `mux` credential (port 22:
 * the device's sshd; another: a port its agent forwards); resolves to the socket once the tunnel
 * answered 200, with bytes after the head put back.
 */
function connectThroughMux(
  mux: MuxAddress,
  input: { secretKey: string; baseDomain: string; deviceId: string; port: number },
): Promise<net.Socket> {
  const credential = signCredential(input.secretKey, "mux", {
    d: input.deviceId,
    exp: Math.floor(Date.now() / 1000) + 60,
  });
  const host = deviceHost(input.deviceId, input.baseDomain);
  return new Promise((resolve, reject) => {
    // Half-open for a forwarded port (its client may finish sending and still read); SSH never needs it.
    const socket = net.connect({ port: mux.port, host: mux.host, allowHalfOpen: input.port !== 22 });
    let head = Buffer.alloc(0);
    const fail = (code: string, detail: string) => {
      clearTimeout(timer);
      socket.destroy();
      reject(new MuxError(code, detail));
    };
    const timer = setTimeout(
      () => fail("tunnel_timeout", "the tunnel did not answer in time"),
      CONNECT_TIMEOUT_MS,
    );
    socket.once("error", (error) => fail("tunnel_unreachable", error.message));
    socket.once("connect", () => {
      socket.write(
        `CONNECT ${host}:${input.port} HTTP/1.1\r\nHost: ${host}:${input.port}\r\nProxy-Authorization: Bearer ${credential}\r\n\r\n`,
      );
    });
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) {
        if (head.length > 16_384) fail("tunnel_unreachable", "the multiplexer sent no HTTP head");
        return;
      }
      socket.off("data", onData);
      socket.pause();
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head.toString("latin1"))?.[1] ?? 0);
      if (status !== 200)
        return fail(STATUS_CODES[status] ?? "tunnel_refused", `the multiplexer answered ${status}`);
      clearTimeout(timer);
      socket.removeAllListeners("error");
      // STACK-NOTES: bytes after the 200 belong to the stream; pause and unshift, or an SSH banner is lost.
      if (end + 4 < head.length) socket.unshift(head.subarray(end + 4));
      resolve(socket);
    };
    socket.on("data", onData);
  });
}

/**
 * A stream to `port` on the device through its tunnel, dialling the multiplexer of the process that
 * holds it, and retrying while the tunnel is not connected yet (it starts a second or so after a lease
 * opened) or its holder is unreachable (killed: the agent reconnects to another process within seconds).
 */
export async function tunnelSocket(
  route: MuxRoute,
  input: { secretKey: string; baseDomain: string; deviceId: string; port: number },
): Promise<net.Socket> {
  const deadline = Date.now() + TUNNEL_WAIT_MS;
  for (let attempt = 0; ; attempt++) {
    const found = await muxFor(route.sql, input.deviceId);
    try {
      return await connectThroughMux(found?.mux ?? route.fallback, input);
    } catch (error) {
      const code = error instanceof MuxError ? error.code : undefined;
      const waiting = code === "device_not_connected" || (found?.holds && code === "tunnel_unreachable");
      if (!waiting || Date.now() + TUNNEL_RETRY_MS > deadline || attempt > 200) throw error;
      await Bun.sleep(TUNNEL_RETRY_MS);
    }
  }
}
