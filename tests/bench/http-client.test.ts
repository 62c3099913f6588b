import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { heartbeatBody, heartbeatBodyText } from "../../bench/heartbeat/body";
import { KeepAliveConnection, parseAnswer } from "../../bench/heartbeat/http-client";

/**
 * The heartbeat benchmark's load generator: its keep-alive client against a real Bun server (what
 * it sends must be what the server reads, one connection carrying every request), and its
 * prepared bodies (the same JSON a fresh serialisation gives).
 */
let server: ReturnType<typeof Bun.serve>;
const seen: { url: string; body: string; peer: number }[] = [];

beforeAll(() => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request, srv) {
      const body = await request.text();
      // The client's port: the same on every request of one connection.
      seen.push({ url: request.url, body, peer: srv.requestIP(request)?.port ?? -1 });
      const url = new URL(request.url);
      if (url.pathname === "/close")
        return new Response(null, { status: 500, headers: { connection: "close" } });
      return Response.json(
        { echo: body.length, path: url.pathname },
        { status: Number(url.searchParams.get("status") ?? 200) },
      );
    },
  });
});
afterAll(() => server.stop(true));

describe("the benchmark's keep-alive client", () => {
  test("sends each request whole and reads each answer's status and length, all on one connection", async () => {
    seen.length = 0;
    const connection = await KeepAliveConnection.open(`http://127.0.0.1:${server.port}`);
    const big = "x".repeat(16_000_000); // larger than a socket write takes at once: the rest goes on drain
    const bodies = ['{"a":1}', JSON.stringify({ big }), "{}"];
    const answers = [];
    for (const [i, body] of bodies.entries())
      answers.push(await connection.post(`/heartbeat/${i}?status=${200 + i}`, body));
    connection.close();
    expect(answers.map((a) => a.status)).toEqual([200, 201, 202]);
    for (const [i, answer] of answers.entries()) {
      const json = JSON.stringify({ echo: bodies[i]!.length, path: `/heartbeat/${i}` });
      expect(answer.bytes).toBe(json.length);
    }
    expect(seen.map((s) => s.body)).toEqual(bodies);
    expect(seen.map((s) => new URL(s.url).search)).toEqual(["?status=200", "?status=201", "?status=202"]);
    expect(new Set(seen.map((s) => s.peer)).size).toBe(1);
  });

  test("a connection the server closes fails its request and every later one", async () => {
    const connection = await KeepAliveConnection.open(`http://127.0.0.1:${server.port}`);
    const answer = await connection.post("/close", "{}");
    expect(answer.status).toBe(500);
    await Bun.sleep(50);
    await expect(connection.post("/after", "{}")).rejects.toThrow("connection closed");
  });

  test("one request at a time on a connection", async () => {
    const connection = await KeepAliveConnection.open(`http://127.0.0.1:${server.port}`);
    const first = connection.post("/one", "{}");
    await expect(connection.post("/two", "{}")).rejects.toThrow("one request at a time");
    expect((await first).status).toBe(200);
    connection.close();
  });

  test("answers are parsed only when whole, and what is not HTTP/1.1 with a length is an error", () => {
    const answer = "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 2\r\n\r\n{}";
    expect(parseAnswer(answer)).toEqual({ status: 429, bytes: 2, body: "{}" });
    expect(parseAnswer(answer.slice(0, -1))).toBe("incomplete");
    expect(parseAnswer("HTTP/1.1 200 OK\r\ncontent-len")).toBe("incomplete");
    expect(parseAnswer(`${answer}x`)).toBeInstanceOf(Error);
    expect(parseAnswer("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}")).toBeInstanceOf(Error);
    expect(parseAnswer("SSH-2.0-OpenSSH\r\n\r\n")).toBeInstanceOf(Error);
  });
});

test("a prepared heartbeat body is the JSON of heartbeatBody, with its own MAC, name and uptime", () => {
  const text = heartbeatBodyText();
  const body = JSON.parse(text("02:00:00:00:AB:CD", 4242));
  const expected = heartbeatBody("02:00:00:00:AB:CD", 4242);
  // The two fields that change on every call on their own.
  expect(body.telemetry.meta.timestamp).toMatch(/^\d{4}-\d\d-\d\dT/);
  expect(body.telemetry.scripts.cpu.data.output.load_1m).toBeWithin(0, 4);
  body.telemetry.meta.timestamp = expected.telemetry.meta.timestamp;
  body.telemetry.scripts.cpu.data.output.load_1m = expected.telemetry.scripts.cpu.data.output.load_1m;
  expect(body).toEqual(expected);
  expect(body.telemetry.device.identity.name).toBe("atom-02000000abcd");
});
