import net, { type Socket } from "node:net";
import { signCredential, verifyCredential } from "../token";
import { header, type RequestHead, serializeHead } from "./http-head";
import type { Endpoint } from "./instances";

/**
 * The mark of a request one HTTP front forwarded to the front of the tunnel process holding its device:
 * a one-minute `front` credential naming the device, signed with SECRET_KEY. It grants nothing (the
 * holder checks the cookie, ticket and lease as for any request); it only stops a second hop, and a
 * client cannot forge it to make a front skip anything.
 */
export const FORWARDED_HEADER = "x-outpost-forwarded";
const CONNECT_TIMEOUT_MS = 3000;
const IDLE_MS = 300_000;

/** Whether the request carries no forward mark ("none"), a valid one for `deviceId`, or a bad one. */
export function forwardMark(
  head: RequestHead,
  secretKey: string,
  deviceId: string,
): "none" | "valid" | "bad" {
  const value = header(head, FORWARDED_HEADER);
  if (value === undefined) return "none";
  return verifyCredential(secretKey, "front", value)?.d === deviceId ? "valid" : "bad";
}

/**
 * Passes one request (a WebSocket upgrade included) to the holder's front and joins the two connections
 * byte for byte: the holder answers `Connection: close`, so nothing else ever travels on them. Resolves
 * false, having sent nothing, when the holder cannot be reached (the caller answers itself). When the
 * holder goes away mid-response the client's connection is cut too, so a download it was serving ends
 * short of its length or without its last chunk: an error to the client, never a complete-looking reply.
 */
export function forwardToHolder(
  socket: Socket,
  head: RequestHead,
  holder: Endpoint,
  input: { secretKey: string; deviceId: string },
): Promise<boolean> {
  const mark = signCredential(input.secretKey, "front", {
    d: input.deviceId,
    exp: Math.floor(Date.now() / 1000) + 60,
  });
  const headers = head.headers.filter(([n]) => n.toLowerCase() !== FORWARDED_HEADER);
  headers.push([FORWARDED_HEADER, mark]);
  return new Promise((resolve) => {
    const upstream = net.connect({ host: holder.host, port: holder.port });
    const timer = setTimeout(() => upstream.destroy(new Error("connect timeout")), CONNECT_TIMEOUT_MS);
    upstream.once("error", () => {
      clearTimeout(timer);
      resolve(false);
    });
    upstream.once("connect", () => {
      clearTimeout(timer);
      upstream.removeAllListeners("error");
      upstream.on("error", () => socket.destroy());
      socket.on("error", () => upstream.destroy());
      socket.on("close", () => upstream.destroy());
      // An orderly end reaches the client through the pipe, after what is still queued (destroying
      // here would truncate); a reset cuts the client at once.
      upstream.on("close", (hadError) => hadError && socket.destroy());
      socket.setTimeout(IDLE_MS, () => socket.destroy());
      upstream.write(serializeHead({ ...head, headers }));
      if (head.rest.length > 0) upstream.write(head.rest);
      socket.pipe(upstream);
      upstream.pipe(socket);
      resolve(true);
    });
  });
}
