import ssh2, { type ClientChannel } from "ssh2";
import { fingerprintOf } from "../platform/host-key";
import { MuxError, type MuxRoute, tunnelSocket } from "../remote-access/service";
import type { HostKeyCheck } from "./host-keys";
import { JoinError } from "./model";

export type { MuxRoute };

const CONNECT_TIMEOUT_MS = 10_000;

/** The device's sshd through the multiplexer; its refusals as the join's `terminal_unavailable` errors. */
async function sshSocket(mux: MuxRoute, input: { secretKey: string; baseDomain: string; deviceId: string }) {
  try {
    return await tunnelSocket(mux, { ...input, port: 22 });
  } catch (error) {
    if (error instanceof MuxError) throw new JoinError("terminal_unavailable", error.code, error.message);
    throw error;
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
  mux: MuxRoute,
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
  const socket = await sshSocket(mux, input);
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
