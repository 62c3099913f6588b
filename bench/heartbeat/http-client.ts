/**
 * The load generator's HTTP/1.1 client: one keep-alive TCP connection per simulated caller, requests
 * written as prepared text, answers parsed just far enough for their status and length (wrk-style).
 *
 * Why not `fetch`: the load generator shares the machine's two cores with the server and PostgreSQL,
 * and Bun's `fetch` cost 0.04-0.13 ms of CPU per heartbeat, a third of what the server spends. What the
 * server does per request is the same either way (it parses the same bytes and writes the same answer),
 * and in production a reverse proxy (Caddy) holds keep-alive connections to it just like these.
 */
import type { Socket } from "bun";

/** `body`: the answer's text (latin1, as received: the simulated devices of bench:rollout read their commands). */
export type Answer = { status: number; bytes: number; body: string };

const HEADER_END = "\r\n\r\n";

/** A request in flight: the answer's bytes so far, and how to settle it. */
type Pending = {
  received: string;
  resolve(answer: Answer): void;
  reject(error: Error): void;
};

export class KeepAliveConnection {
  private pending: Pending | undefined;
  private unsent = "";
  private closed = false;

  private constructor(private socket: Socket<KeepAliveConnection>) {}

  /** A connection to `url`'s host and port (http only). */
  static async open(url: string): Promise<KeepAliveConnection> {
    const { hostname, port } = new URL(url);
    let connection: KeepAliveConnection | undefined;
    await Bun.connect<KeepAliveConnection>({
      hostname,
      port: Number(port),
      socket: {
        open(socket) {
          connection = new KeepAliveConnection(socket);
          socket.data = connection;
        },
        data(socket, chunk) {
          socket.data.received(chunk.toString("latin1"));
        },
        drain(socket) {
          socket.data.flush();
        },
        close(socket) {
          socket.data.fail(new Error("connection closed"));
        },
        error(socket, error) {
          socket.data.fail(error);
        },
      },
    });
    return connection!;
  }

  /** POSTs `body` (ASCII JSON) to `target` (path and query) and resolves with the answer. */
  post(target: string, body: string): Promise<Answer> {
    if (this.closed) return Promise.reject(new Error("connection closed"));
    if (this.pending) return Promise.reject(new Error("one request at a time on a connection"));
    return new Promise<Answer>((resolve, reject) => {
      this.pending = { received: "", resolve, reject };
      this.unsent = `POST ${target} HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
      this.flush();
    });
  }

  close() {
    this.closed = true;
    this.socket.end();
  }

  private flush() {
    if (!this.unsent) return;
    const written = this.socket.write(this.unsent);
    this.unsent = written >= this.unsent.length ? "" : this.unsent.slice(Math.max(0, written));
  }

  private received(text: string) {
    const pending = this.pending;
    if (!pending) return this.fail(new Error("bytes arrived with no request in flight"));
    pending.received += text;
    const answer = parseAnswer(pending.received);
    if (answer === "incomplete") return;
    this.pending = undefined;
    if (answer instanceof Error) {
      this.fail(answer);
      pending.reject(answer);
    } else pending.resolve(answer);
  }

  private fail(error: Error) {
    this.closed = true;
    const pending = this.pending;
    this.pending = undefined;
    pending?.reject(error);
  }
}

/** One whole HTTP/1.1 answer with a content-length (what Bun's server sends for these replies). */
export function parseAnswer(text: string): Answer | Error | "incomplete" {
  const headerEnd = text.indexOf(HEADER_END);
  if (headerEnd < 0) return "incomplete";
  const status = Number(text.slice(9, 12));
  if (!text.startsWith("HTTP/1.1 ") || !Number.isInteger(status))
    return new Error(`not an HTTP/1.1 answer: ${JSON.stringify(text.slice(0, 40))}`);
  const lengthHeader = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, headerEnd + 2));
  if (!lengthHeader) return new Error("an answer without content-length");
  const bodyStart = headerEnd + HEADER_END.length;
  const length = Number(lengthHeader[1]);
  if (text.length < bodyStart + length) return "incomplete";
  if (text.length > bodyStart + length) return new Error("more bytes than the answer announced");
  return { status, bytes: length, body: text.slice(bodyStart) };
}
