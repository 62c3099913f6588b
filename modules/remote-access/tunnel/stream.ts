import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { ServerChannel } from "ssh2";
import { LineTimeout } from "../../../shared/tunnel-work";
import { openWork } from "./data-plane";
import type { DeviceTunnel } from "./registry";

/** A device that does not confirm a channel within this long is treated as frozen (504). */
export const OPEN_TIMEOUT_MS = 4000;

export class ChannelTimeout extends Error {}

/**
 * Opens a stream to one of a device's forwards: over an idle work connection when the agent keeps some
 * (the data plane), else over an SSH channel with exactly the bind name and port the agent asked for
 * (the client matches channels on both; ssh2's forwardOut has no timeout of its own).
 */
export async function openForward(
  tunnel: DeviceTunnel,
  forward: string,
  timeoutMs = OPEN_TIMEOUT_MS,
): Promise<Duplex> {
  const port = tunnel.forwards.get(forward);
  if (port === undefined) throw new Error(`the device offers no ${forward} forward`);
  const work = tunnel.work.take();
  if (work) {
    try {
      return await openWork(work, forward, timeoutMs);
    } catch (error) {
      // A device that does not answer in time is frozen: its SSH channel would not answer either.
      if (error instanceof LineTimeout) throw new ChannelTimeout("the device did not answer");
      // A work connection that died while idle: the SSH channel still serves.
    }
  }
  return openChannel(tunnel, forward, port, timeoutMs);
}

function openChannel(
  tunnel: DeviceTunnel,
  forward: string,
  port: number,
  timeoutMs: number,
): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      reject(new ChannelTimeout("the device did not answer"));
    }, timeoutMs);
    tunnel.client.forwardOut(forward, port, "127.0.0.1", 0, (error, channel) => {
      clearTimeout(timer);
      if (settled) {
        channel?.destroy();
        return;
      }
      settled = true;
      if (error) reject(error);
      else {
        if (forward.startsWith("tcp:")) keepHalfOpen(channel);
        resolve(channel as unknown as Duplex);
      }
    });
  });
}

/**
 * A forwarded TCP port keeps half-close over an SSH channel as over a work connection: the end of our
 * writing is the channel's EOF only, so the device's answer still flows back, and the channel closes
 * once both directions ended. ssh2 closes a server-side channel at the end of its writing ('finish'
 * sends EOF and CLOSE), which cut the answer of a client that had finished sending (`nc -N`).
 */
function keepHalfOpen(channel: ServerChannel): void {
  // ssh2's own listeners at this point are that EOF-and-CLOSE; 'finish' comes after every write was sent.
  channel.removeAllListeners("prefinish");
  channel.removeAllListeners("finish");
  let received = false;
  let sent = false;
  const closeOnceBoth = () => {
    if (received && sent) channel.close();
  };
  channel.once("finish", () => {
    channel.eof();
    sent = true;
    closeOnceBoth();
  });
  channel.once("end", () => {
    received = true;
    closeOnceBoth();
  });
}

/**
 * Joins a client socket and a channel both ways without losing queued bytes: an orderly end on one side
 * ends the other (destroying at once drops what is still buffered, STACK-NOTES "truncation"); an error
 * destroys both. An idle socket is destroyed after `idleMs` as a safety net.
 */
export function join(socket: Socket, channel: Duplex, idleMs = 300_000): void {
  socket.setTimeout(idleMs, () => {
    socket.destroy();
    channel.destroy();
  });
  socket.pipe(channel);
  channel.pipe(socket);
  socket.on("error", () => channel.destroy());
  channel.on("error", () => socket.destroy());
  channel.on("close", () => socket.end());
}
