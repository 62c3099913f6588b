import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { startOutpost } from "../../app";
import { loadE2EConfig } from "../../modules/e2e/config";
import { ConfigError, loadConfig } from "../../modules/platform/config";
import { createLogger } from "../../modules/platform/logger";
import { startTestApp } from "../helpers/app";
import { RUNNER_ID, RUNNER_TOKEN, writeE2EFixture } from "./fixtures";

const fixture = writeE2EFixture();

function configWith(yaml: string): string {
  const file = path.join(fixture.dir, `config-${crypto.randomUUID()}.yaml`);
  writeFileSync(file, yaml);
  return file;
}

describe("E2E configuration file", () => {
  test("defaults: protocol 1, seed timeout 120 s, retention 14 d / 2000 runs / 1 GB, run timeout 7200 s", () => {
    const config = loadE2EConfig(configWith("allowed_environments: [local]\nsuites:\n  s: [a]\n"), {});
    expect(config.protocolVersions).toEqual(["1"]);
    expect(config.environments.get("local")).toEqual({ label: "local", seed: undefined, seedTimeoutS: 120 });
    expect(config.retention).toEqual({ days: 14, maxRuns: 2000, maxLogBytes: 1_000_000_000 });
    expect(config.runTimeoutS).toBe(7200);
    expect(config.seedPickupGraceS).toBe(30);
    expect(config.journeysDir).toBe(path.join(fixture.dir, "journeys"));
  });

  test("the fixture's runners resolve env: tokens", () => {
    const config = loadE2EConfig(fixture.configFile);
    expect(config.runners.get(RUNNER_ID)).toBe(RUNNER_TOKEN);
    expect(config.runners.size).toBe(2);
  });

  test("each invalid file fails with one line naming the key", () => {
    const cases: [string, string][] = [
      ["suites:\n  s: [a]\n", "allowed_environments is required"],
      ["allowed_environments: [local]\n", "suites is required"],
      [
        "allowed_environments: [local]\nsuites:\n  s: [a]\nrunners:\n  r1: short\n",
        "runners.r1 token must be at least 32 bytes",
      ],
      [
        "allowed_environments: [local]\nsuites:\n  s: [a]\nrunners:\n  r1: env:OUTPOST_E2E_NOT_SET_ANYWHERE\n",
        "OUTPOST_E2E_NOT_SET_ANYWHERE",
      ],
      [
        'allowed_environments: [local]\nsuites:\n  s: [a]\nenvironments:\n  local: { seed: "./seed.sh" }\n',
        "environments.local.seed must be a non-empty list",
      ],
      [
        "allowed_environments: [local]\nsuites:\n  s: [a]\nenvironments:\n  local: { seed_timeout_s: 0 }\n",
        "environments.local.seed_timeout_s must be an integer",
      ],
      ["allowed_environments: [local]\nsuites:\n  s: [Bad-Journey]\n", "suites.s has an invalid entry"],
      [
        "allowed_environments: [local]\nsuites:\n  s: [a]\nretention: { days: -1 }\n",
        "retention.days must be an integer",
      ],
      ["allowed_environments: [local]\nsuites:\n  s: [a]\nsurprise: 1\n", "surprise is not a known key"],
      ["allowed_environments: [local\n", "cannot be read as YAML"],
    ];
    for (const [yaml, expected] of cases) {
      let error: unknown;
      try {
        loadE2EConfig(configWith(yaml), {});
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ConfigError);
      const message = (error as Error).message;
      expect(message).toContain(expected);
      expect(message).toStartWith("E2E_CONFIG ");
      expect(message.includes("\n")).toBe(false);
    }
  });

  test("start fails before anything runs when E2E_ENABLED=true has no or an invalid E2E_CONFIG", async () => {
    const base = {
      DATA_DIR: fixture.dir,
      SECRET_KEY: "x".repeat(40),
      DATABASE_URL: "postgres://127.0.0.1:1/none",
    };
    await expect(
      startOutpost(loadConfig({ ...base, E2E_ENABLED: "true" }), createLogger("silent")),
    ).rejects.toThrow("E2E_ENABLED=true needs E2E_CONFIG");
    const bad = configWith("allowed_environments: [local]\n");
    await expect(
      startOutpost(loadConfig({ ...base, E2E_ENABLED: "true", E2E_CONFIG: bad }), createLogger("silent")),
    ).rejects.toBeInstanceOf(ConfigError);
  });
});

describe("E2E disabled", () => {
  test("every /e2e API route answers 404, even with valid credentials; the runs page explains it", async () => {
    const app = await startTestApp({ E2E_CONFIG: fixture.configFile });
    const headers = {
      "x-e2e-runner-id": RUNNER_ID,
      authorization: `Bearer ${RUNNER_TOKEN}`,
      "x-e2e-protocol-version": "1",
      "content-type": "application/json",
    };
    const id = crypto.randomUUID();
    for (const [method, pathname] of [
      ["GET", "/e2e/suites"],
      ["GET", "/e2e/runs"],
      // Query rules are checked after enablement: a bad limit is still a 404 here.
      ["GET", "/e2e/runs?limit=0"],
      ["GET", "/e2e/runs?limit=abc&status=a&status=b"],
      ["POST", "/e2e/runs"],
      ["GET", `/e2e/runs/${id}`],
      ["POST", `/e2e/runs/${id}/cancel`],
      ["GET", `/e2e/runs/${id}/results`],
      ["POST", `/e2e/runs/${id}/results`],
      ["GET", `/e2e/runs/${id}/results/a/log`],
      ["PUT", `/e2e/runs/${id}/results/a/log`],
      ["GET", "/e2e/anything"],
    ]) {
      for (const h of [headers, {}]) {
        const response = await app.fetch(pathname!, {
          method,
          headers: h,
          body: method === "GET" ? undefined : "{}",
        });
        expect(`${method} ${pathname} ${response.status}`).toBe(`${method} ${pathname} 404`);
        expect(((await response.json()) as any).error.code).toBe("not_found");
      }
    }
    const viewer = await app.session("viewer");
    const page = await app.fetch("/e2e", { headers: { cookie: viewer.cookie } });
    // The menu entry leads here on every server: a page that says how to turn E2E on, not a 404.
    expect(page.status).toBe(200);
    const text = await page.text();
    expect(text).toContain("E2E runs are turned off");
    expect(text).toContain("<code>E2E_ENABLED=true</code>");
    // The page's query is read after enablement: never a 400.
    const badQuery = await app.fetch("/e2e?page=0&fragment=nope", { headers: { cookie: viewer.cookie } });
    expect(badQuery.status).toBe(200);
    expect(await badQuery.text()).toContain("E2E runs are turned off");
    const admin = await app.session("admin");
    const badForm = await app.fetch("/e2e", {
      method: "POST",
      headers: { cookie: admin.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: admin.csrf, action: "explode" }).toString(),
    });
    expect(badForm.status).toBe(404);
  });
});
