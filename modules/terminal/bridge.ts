import net from "node:net";
import ssh2, { type ClientChannel } from "ssh2";
import { fingerprintOf } from "../platform/host-key";
import { deviceHost, signCredential } from "../remote-access/service";
import type { HostKeyCheck } from "./host-keys";
import { JoinError } from "./model";

/** Where this process reaches the tunnel role's TCP multiplexer. */
export interface MuxAddress {
  host: string;
  port: number;
}

const CONNECT_TIMEOUT_MS = 10_000;
/** The device brings its tunnel up right after it authorized the key: wait this long for it. */
const TUNNEL_WAIT_MS = 20_000;
const TUNNEL_RETRY_MS = 250;

/**
 * `CONNECT dev-<hex>.<BASE_DOMAIN>:22` on the multiplexer with a one-minute `mux` credential; resolves
 * to the socket once the tunnel answered 200 (bytes after the head are put back for SSH).
 */
function connectThroughMux(
  mux: MuxAddress,
  input: { secretKey: string; baseDomain: string; deviceId: string },
): Promise<net.Socket> {
  const credential = signCredential(input.secretKey, "mux", {
    d: input.deviceId,
    exp: Math.floor(Date.now() / 1000) + 60,
  });
  const host = deviceHost(input.deviceId, input.baseDomain);
  return new Promise((resolve, reject) => {
    const socket = net.connect(mux.port, mux.host);
    let head = Buffer.alloc(0);
    const fail = (code: string, detail: string) => {
      clearTimeout(timer);
      socket.destroy();
      reject(new JoinError("terminal_unavailable", code, detail));
    };
    const timer = setTimeout(
      () => fail("tunnel_timeout", "the tunnel did not answer in time"),
      CONNECT_TIMEOUT_MS,
    );
    socket.once("error", (error) => fail("tunnel_unreachable", error.message));
    socket.once("connect", () => {
      socket.write(
        `CONNECT ${host}:22 HTTP/1.1\r\nHost: ${host}:22\r\nProxy-Authorization: Bearer ${credential}\r\n\r\n`,
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
      if (status !== 200) {
        const code =
          status === 502
            ? "device_not_connected"
            : status === 504
              ? "device_not_answering"
              : "tunnel_refused";
        return fail(code, `the multiplexer answered ${status}`);
      }
      clearTimeout(timer);
      socket.removeAllListeners("error");
      // STACK-NOTES: bytes after the 200 belong to SSH; pause and unshift, or the banner is lost.
      if (end + 4 < head.length) socket.unshift(head.subarray(end + 4));
      resolve(socket);
    };
    socket.on("data", onData);
  });
}

/** Retries while the device's tunnel is not connected yet (it starts after the key was authorized). */
async function tunnelSocket(
  mux: MuxAddress,
  input: { secretKey: string; baseDomain: string; deviceId: string },
) {
  const deadline = Date.now() + TUNNEL_WAIT_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      return await connectThroughMux(mux, input);
    } catch (error) {
      const waiting = error instanceof JoinError && error.code === "device_not_connected";
      if (!waiting || Date.now() + TUNNEL_RETRY_MS > deadline || attempt > 200) throw error;
      await Bun.sleep(TUNNEL_RETRY_MS);
    }
  }
}

export interface OpenedShell {
  client: ssh2.Client;
  stream: ClientChannel;
  /** The sshd key seen, when it was not pinned yet (the caller pins it). */
  firstSeenKey?: { publicKey: string; fingerprint: string };
}

/**
 * SSH to the device through the multiplexer with the ssh2 client: the private key stays in memory, no
 * `ssh` or `ncat` executable is needed. The device's sshd must show its pinned ed25519 host key (any
 * key is accepted only while none is pinned, and then returned for pinning). Opens an interactive shell
 * with a pty of the given size, or runs one command.
 */
export async function openShell(
  mux: MuxAddress,
  input: {
    secretKey: string;
    baseDomain: string;
    deviceId: string;
    username: string;
    privateKey: string;
    hostKey: HostKeyCheck;
    columns: number;
    rows: number;
    /** Run this command instead of a login shell. */
    command?: string;
    /** With a command: whether it gets a pty (default true). */
    pty?: boolean;
  },
): Promise<OpenedShell> {
  const socket = await tunnelSocket(mux, input);
  const client = new ssh2.Client();
  let firstSeenKey: OpenedShell["firstSeenKey"];
  let hostKeyRefused = false;
  await new Promise<void>((resolve, reject) => {
    client.once("ready", () => resolve());
    client.once("error", (error: Error & { level?: string }) => {
      socket.destroy();
      if (hostKeyRefused) reject(new JoinError("host_key_changed", "host_key_mismatch"));
      else if (error.level === "client-authentication")
        reject(new JoinError("authorization_failed", "ssh_authentication_failed", error.message));
      else reject(new JoinError("terminal_unavailable", "startup_failed", error.message));
    });
    client.connect({
      sock: socket,
      username: input.username,
      privateKey: input.privateKey,
      readyTimeout: CONNECT_TIMEOUT_MS,
      keepaliveInterval: 15_000,
      hostVerifier: (key: Buffer) => {
        const fingerprint = fingerprintOf(key);
        if (input.hostKey.state === "unpinned") {
          const parsed = ssh2.utils.parseKey(key);
          const type =
            parsed instanceof Error ? "ssh-ed25519" : (Array.isArray(parsed) ? parsed[0]! : parsed).type;
          firstSeenKey = { publicKey: `${type} ${key.toString("base64")}`, fingerprint };
          return true;
        }
        hostKeyRefused = fingerprint !== input.hostKey.fingerprint;
        return !hostKeyRefused;
      },
    });
  });
  const stream = await new Promise<ClientChannel>((resolve, reject) => {
    // A UTF-8 locale, or readline in the C locale reads "é" as Meta-C and garbles the line (the device's
    // sshd takes it with `AcceptEnv LANG`, Debian's default and our drop-in).
    const window = { term: "xterm-256color", cols: input.columns, rows: input.rows };
    const opened = (error: Error | undefined, channel: ClientChannel) => {
      if (error) {
        client.end();
        reject(new JoinError("terminal_unavailable", "startup_failed", error.message));
      } else resolve(channel);
    };
    const env = { LANG: "C.UTF-8" };
    // One command (`outpost ssh <device> -- <command>`): a pty only when the operator's end is a
    // terminal (as `ssh -t`), else plain pipes and its output as it comes.
    if (input.command !== undefined)
      client.exec(input.command, input.pty === false ? { env } : { env, pty: window }, opened);
    else client.shell(window, { env }, opened);
  });
  return { client, stream, firstSeenKey };
}
