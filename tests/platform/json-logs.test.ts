// LOG_FORMAT=json as a log shipper reads it: the real `./outpost start` on a fresh data directory (so
// the first-start setup code is announced), a few requests, a stop; then every line on stdout and on
// stderr is one JSON object, no object repeats a key (checked on the raw text: JSON.parse keeps the
// last), and every line about a request carries its request id.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { RUNNER_ID, runnerHeaders, writeE2EFixture } from "../e2e/fixtures";
import { killEmbeddedPostgres, startOutpostProcess } from "../helpers/process";

const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-json-logs-"));
afterAll(() => {
  killEmbeddedPostgres(path.join(dataDir, "postgres"));
  rmSync(dataDir, { recursive: true, force: true });
});

/**
 * The keys an object in `text` repeats (at any depth), read from the raw JSON: a small recursive
 * descent over objects, arrays and strings (numbers and literals are skipped as plain characters).
 */
function repeatedKeys(text: string): string[] {
  const repeated: string[] = [];
  let i = 0;
  const readString = (): string => {
    const start = i;
    i++; // opening quote
    while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const skipSpace = () => {
    while (/\s/.test(text[i] ?? "")) i++;
  };
  const value = (): void => {
    skipSpace();
    if (text[i] === "{") {
      i++;
      const keys = new Set<string>();
      skipSpace();
      while (text[i] !== "}" && i < text.length) {
        skipSpace();
        const key = readString();
        if (keys.has(key)) repeated.push(key);
        keys.add(key);
        skipSpace();
        i++; // colon
        value();
        skipSpace();
        if (text[i] === ",") i++;
        skipSpace();
      }
      i++;
    } else if (text[i] === "[") {
      i++;
      skipSpace();
      while (text[i] !== "]" && i < text.length) {
        value();
        skipSpace();
        if (text[i] === ",") i++;
      }
      i++;
    } else if (text[i] === '"') readString();
    else while (i < text.length && !/[,}\]\s]/.test(text[i]!)) i++;
  };
  value();
  return repeated;
}

test("the duplicate-key reader finds a repeated key, nested too, and nothing in clean JSON", () => {
  expect(repeatedKeys('{"a":1,"role":"web","b":{"x":[1,{"y":"\\"}"}]},"role":"web"}')).toEqual(["role"]);
  expect(repeatedKeys('{"a":{"b":1,"b":2},"c":[{"d":1}]}')).toEqual(["b"]);
  expect(repeatedKeys('{"a":"b,\\"a\\":1","c":[1,2,true,null]}')).toEqual([]);
});

test("LOG_FORMAT=json: every stdout and stderr line is one JSON object, request lines carry the request id", async () => {
  const fixture = writeE2EFixture();
  const outpost = await startOutpostProcess(
    {
      DATA_DIR: dataDir,
      LOG_FORMAT: "json",
      LOG_LEVEL: "debug", // the access log: one line per request
      E2E_ENABLED: "true",
      E2E_CONFIG: fixture.configFile,
    },
    90_000,
    false,
  );
  try {
    expect((await fetch(`${outpost.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${outpost.url}/no-such-page`)).status).toBe(404);
    const given = "trace-from-the-proxy-1";
    const bad = await fetch(`${outpost.url}/api/v1/devices/register`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": given },
      body: "{not json",
    });
    expect(bad.status).toBe(400);
    // A handler's own line about its request (an E2E run created in an environment without a seed).
    const created = await fetch(`${outpost.url}/e2e/runs`, {
      method: "POST",
      headers: runnerHeaders({ "x-request-id": "create-run-1" }),
      body: JSON.stringify({ suite_id: "smoke", environment_label: "plain", trigger_source: "ci" }),
    });
    expect(created.status).toBe(201);
  } finally {
    expect(await outpost.interrupt()).toBe(0);
  }

  const { stdout, stderr } = outpost.streams();
  const lines = [...stdout.split("\n"), ...stderr.split("\n")].filter((line) => line !== "");
  const parsed: Record<string, unknown>[] = [];
  for (const line of lines) {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      value = undefined;
    }
    expect({ line, object: typeof value === "object" && value !== null && !Array.isArray(value) }).toEqual({
      line,
      object: true,
    });
    expect({ line, repeated: repeatedKeys(line) }).toEqual({ line, repeated: [] });
    parsed.push(value as Record<string, unknown>);
  }
  const messages = parsed.map((line) => String(line.msg));
  // The first start's setup code is a line like the others, with the code and the page to enter it.
  const setup = parsed.find((line) => typeof line.setup_code === "string");
  expect(setup).toMatchObject({ setup_url: expect.stringMatching(/\/setup$/) });
  expect(String(setup!.msg)).toContain(String(setup!.setup_code));
  expect(messages).toContain("Outpost is listening");
  expect(messages).toContain("stopped cleanly");

  const requests = parsed.filter((line) => line.msg === "request");
  expect(requests.map((line) => new URL(String(line.url)).pathname)).toEqual(
    expect.arrayContaining(["/healthz", "/no-such-page", "/api/v1/devices/register", "/e2e/runs"]),
  );
  for (const line of requests) expect(line.requestId).toEqual(expect.stringMatching(/^[\w.-]{1,64}$/));
  expect(requests.find((line) => String(line.url).endsWith("/register"))!.requestId).toBe(
    "trace-from-the-proxy-1",
  );
  expect(parsed.find((line) => line.msg === "E2E run created")).toMatchObject({
    requestId: "create-run-1",
    runner: RUNNER_ID,
  });
}, 180_000);
