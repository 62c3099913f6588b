import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { resultsOutboxPath } from "../../agent/results-outbox";
import { scriptText } from "../agent/helpers";
import { startTestApp } from "../helpers/app";
import { agentHarness } from "./agent-harness";

// A command's result survives a failed post and a restart of the agent: the real agent (from source, a
// new process per poll) behind a proxy that answers the first results post 502, as Caddy does when the
// web process behind it is killed mid-request (the system journeys' fault journey met exactly this).
const app = await startTestApp();
let failResultsPosts = 0;
const proxied: string[] = [];
const proxy = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const url = new URL(request.url);
    const isResults = request.method === "POST" && url.pathname.endsWith("/command_results");
    if (isResults) proxied.push(failResultsPosts > 0 ? "502" : "forwarded");
    if (isResults && failResultsPosts > 0) {
      failResultsPosts--;
      return new Response("<html>502 Bad Gateway</html>", { status: 502 });
    }
    return fetch(new URL(url.pathname + url.search, app.url), {
      method: request.method,
      headers: request.headers,
      body: request.method === "GET" || request.method === "HEAD" ? undefined : await request.arrayBuffer(),
      redirect: "manual",
    });
  },
});
const { work, agent, pollOnce, queue, commandStatus, registerApproved, cleanup } = await agentHarness(
  app,
  "outbox-test",
  `http://127.0.0.1:${proxy.port}`,
);
afterAll(() => {
  cleanup();
  proxy.stop(true);
});
const outbox = resultsOutboxPath(path.join(work.dir, "state"));

async function pollWithResultsLost() {
  const child = agent(["poll", "--once"]);
  const [stderr] = await Promise.all([new Response(child.stderr).text(), child.exited]);
  return stderr;
}

describe("command results the server did not take", () => {
  test("are kept on disk and posted by the next run of the agent", async () => {
    const device = await registerApproved();
    const install = await queue(device.id, {
      type: "install_script",
      payload: {
        name: "counter",
        data: scriptText("counter", 1, "function main() { return { n: 1 }; }"),
      },
    });

    failResultsPosts = 1;
    const stderr = await pollWithResultsLost();
    expect(stderr).toContain("posting command results failed; kept for the next poll");
    expect(proxied).toEqual(["502"]);
    expect((await commandStatus(install)).status).toBe("delivered");
    const kept = JSON.parse(fs.readFileSync(outbox, "utf8"));
    expect(kept).toMatchObject([{ command_id: install, status: "OK" }]);
    expect(fs.statSync(outbox).mode & 0o777).toBe(0o600);

    await pollOnce(); // a new process: the restart reads the outbox
    expect(proxied).toEqual(["502", "forwarded"]);
    expect((await commandStatus(install)).status).toBe("succeeded");
    expect(fs.existsSync(outbox)).toBe(false);

    await pollOnce(); // nothing left to post: no further results request
    expect(proxied).toEqual(["502", "forwarded"]);
  });

  test("an unreadable outbox is set aside, not trusted, and polling goes on", async () => {
    fs.writeFileSync(outbox, "{not json");
    await pollOnce();
    expect(fs.existsSync(outbox)).toBe(false);
    const aside = fs
      .readdirSync(path.dirname(outbox))
      .filter((f) => f.startsWith("results-outbox.json.corrupt-"));
    expect(aside).toHaveLength(1);
  });
});
