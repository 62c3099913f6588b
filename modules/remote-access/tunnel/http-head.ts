import type { Socket } from "node:net";
import { securityHeaders } from "../../platform/security-headers";

/** Largest request head the fronts read before answering 431. */
export const MAX_HEAD_BYTES = 64 * 1024;

export interface RequestHead {
  method: string;
  target: string;
  version: string;
  /** Header lines as received (name, value), in order. */
  headers: [string, string][];
  /** Bytes received after the head (the start of the body, or of a tunnelled stream). */
  rest: Buffer;
}

export function header(head: RequestHead, name: string): string | undefined {
  const lower = name.toLowerCase();
  return head.headers.find(([n]) => n.toLowerCase() === lower)?.[1];
}

/**
 * Reads one HTTP/1.x request head from `socket`, then pauses it (the caller pipes the rest; bytes read
 * past the head are in `rest`). Resolves undefined when the peer closes, the head is malformed or too big.
 */
export function readRequestHead(socket: Socket, timeoutMs = 30_000): Promise<RequestHead | undefined> {
  return new Promise((resolve) => {
    let buffered: Buffer = Buffer.alloc(0);
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    function finish(result: RequestHead | undefined) {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("end", onEnd);
      socket.off("error", onEnd);
      socket.pause();
      resolve(result);
    }
    function onEnd() {
      finish(undefined);
    }
    function onData(chunk: Buffer) {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf("\r\n\r\n");
      if (end < 0) {
        if (buffered.length > MAX_HEAD_BYTES) finish(undefined);
        return;
      }
      finish(parseHead(buffered.subarray(0, end).toString("latin1"), buffered.subarray(end + 4)));
    }
    socket.on("data", onData);
    socket.on("end", onEnd);
    socket.on("error", onEnd);
  });
}

function parseHead(text: string, rest: Buffer): RequestHead | undefined {
  const lines = text.split("\r\n");
  const match = /^([A-Z]+) (\S+) (HTTP\/1\.[01])$/.exec(lines[0] ?? "");
  if (!match) return undefined;
  const headers: [string, string][] = [];
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0 || /\s/.test(line.slice(0, colon))) return undefined;
    headers.push([line.slice(0, colon), line.slice(colon + 1).trim()]);
  }
  return { method: match[1]!, target: match[2]!, version: match[3]!, headers, rest };
}

export function serializeHead(head: Pick<RequestHead, "method" | "target" | "version" | "headers">): Buffer {
  const lines = [
    `${head.method} ${head.target} ${head.version}`,
    ...head.headers.map(([n, v]) => `${n}: ${v}`),
  ];
  return Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
}

const FRONT_PAGE_HEADERS = securityHeaders(false);

const REASONS: Record<number, string> = {
  200: "Connection Established",
  302: "Found",
  400: "Bad Request",
  403: "Forbidden",
  404: "Not Found",
  407: "Proxy Authentication Required",
  502: "Bad Gateway",
  504: "Gateway Timeout",
};

/**
 * Writes a complete response and closes the connection (the fronts serve one request per connection).
 * The fronts' own pages carry the console's security headers (no script, no framing, no sniffing);
 * Strict-Transport-Security is the TLS terminator's to add (deploy/Caddyfile), as the front speaks http.
 */
export function respond(
  socket: Socket,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  const payload = Buffer.from(body, "utf8");
  const all: Record<string, string> = {
    "content-type": "text/html; charset=utf-8",
    "content-length": String(payload.length),
    "cache-control": "no-store",
    connection: "close",
    ...FRONT_PAGE_HEADERS,
    ...headers,
  };
  const head = [
    `HTTP/1.1 ${status} ${REASONS[status] ?? "Error"}`,
    ...Object.entries(all).map(([n, v]) => `${n}: ${v}`),
  ];
  socket.end(Buffer.concat([Buffer.from(`${head.join("\r\n")}\r\n\r\n`, "latin1"), payload]));
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function page(title: string, message: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)} · Outpost</title></head><body style="font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></body></html>`;
}
