// The kit's assets over real HTTP: gzipped for a browser that accepts it (xterm.js, the largest, shrinks
// to about a quarter), as they are for one that does not; xterm.js carries Chromium's compile hint.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { startTestApp } from "../helpers/app";

const app = await startTestApp();
const XTERM = readFileSync(path.resolve(import.meta.dir, "../../node_modules/@xterm/xterm/lib/xterm.js"));

async function get(name: string, encoding?: string) {
  const response = await fetch(`${app.url}/assets/${name}`, {
    headers: encoding ? { "accept-encoding": encoding } : { "accept-encoding": "identity" },
    decompress: false,
  } as RequestInit);
  return { response, bytes: Buffer.from(await response.arrayBuffer()) };
}

describe("assets", () => {
  test("xterm.js: gzipped when accepted, whole otherwise, with the compile hint first", async () => {
    const gz = await get("xterm.js", "gzip, deflate, br");
    expect(gz.response.headers.get("content-encoding")).toBe("gzip");
    expect(gz.response.headers.get("vary")).toBe("accept-encoding");
    expect(gz.bytes.length).toBeLessThan(XTERM.length / 3);
    const unzipped = Buffer.from(Bun.gunzipSync(new Uint8Array(gz.bytes)));
    expect(unzipped.toString("utf8", 0, 40)).toStartWith("//# allFunctionsCalledOnLoad\n");
    expect(unzipped.subarray(unzipped.indexOf(10) + 1).equals(XTERM)).toBe(true);

    const plain = await get("xterm.js");
    expect(plain.response.headers.get("content-encoding")).toBeNull();
    expect(plain.bytes.equals(unzipped)).toBe(true);
  });
});
