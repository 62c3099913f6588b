import { afterAll } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startTestApp, type TestApp } from "../helpers/app";

export const RUNNER_ID = "ci-runner";
export const RUNNER_TOKEN = "e2e-test-runner-token-0123456789abcdef";
export const OTHER_RUNNER_ID = "laptop.runner";
export const OTHER_RUNNER_TOKEN = "another-runner-token-0123456789abcdefgh";

export interface E2EFixture {
  dir: string;
  configFile: string;
  journeysDir: string;
}

/**
 * A throw-away E2E configuration: environments with tiny shell seeds (ok, fail, slow, gated, none),
 * suites whose journeys use registered actions, and two runners. The `gated` seed waits until the
 * test opens its gate (openSeedGate) and fails once if told to (failNextGatedSeed).
 */
export function writeE2EFixture(overrides: { configYaml?: string; extraConfig?: string } = {}): E2EFixture {
  const dir = mkdtempSync(path.join(tmpdir(), "outpost-e2e-fixture-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const journeysDir = path.join(dir, "journeys");
  mkdirSync(journeysDir);
  const seed = (name: string, body: string) => {
    const file = path.join(dir, name);
    writeFileSync(file, `#!/bin/sh\n${body}\n`);
    chmodSync(file, 0o755);
  };
  seed("seed-ok.sh", 'echo "seeded"');
  seed("seed-fail.sh", 'echo "preparing" ; echo "database fixture missing: widgets" >&2 ; exit 3');
  seed("seed-slow.sh", "sleep 30");
  const gate = path.join(dir, "gate");
  const failOnce = path.join(dir, "fail-once");
  seed(
    "seed-gated.sh",
    // At most about a minute at a closed gate (a seed of a test that died must not wait forever).
    `i=0; while [ ! -e '${gate}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done\n[ -e '${gate}' ] || exit 4\n` +
      `if rm '${failOnce}' 2>/dev/null; then echo "failed once" >&2; exit 3; fi\necho "seeded"`,
  );
  const journey = (id: string, steps: string, description = `Journey ${id}`) =>
    writeFileSync(
      path.join(journeysDir, `${id}.yaml`),
      `id: ${id}\ndescription: ${description}\nsteps:\n${steps}`,
    );
  journey("dashboard", "  - action: fetch_dashboard\n    expect: dashboard_payload\n");
  journey(
    "dashboard_again",
    "  - step_id: second_look\n    action: fetch_dashboard\n    expect: dashboard_payload\n",
  );
  journey("auth", "  - action: register_device\n    expect: uuid_returned\n");
  journey("bad_expect", "  - action: fetch_dashboard\n    expect: something_else\n");
  journey("bad_action", "  - action: launch_rocket\n    expect: rocket_launched\n");
  const configFile = path.join(dir, "config.yaml");
  writeFileSync(
    configFile,
    overrides.configYaml ??
      `protocol_versions: ["1"]
allowed_environments: [local, staging, failing, slow, gated, plain, bench]
environments:
  local: { seed: ["./seed-ok.sh"] }
  staging: { seed: ["sh", "seed-ok.sh"] }
  failing: { seed: ["./seed-fail.sh"] }
  slow: { seed: ["./seed-slow.sh"], seed_timeout_s: 1 }
  gated: { seed: ["./seed-gated.sh"] }
  plain: {}
  bench: {}
  production: { seed: ["./seed-ok.sh"] }
suites:
  smoke: [dashboard, dashboard_again]
  three: [dashboard, dashboard_again, auth]
  broken_expect: [dashboard, bad_expect]
  broken_action: [bad_action]
  missing_file: [dashboard, not_there]
journeys_dir: journeys
runners:
  ${RUNNER_ID}: ${RUNNER_TOKEN}
  ${OTHER_RUNNER_ID}: env:OUTPOST_TEST_OTHER_RUNNER_TOKEN
retention: { days: 14, max_runs: 2000, max_log_bytes: 1000000000 }
max_log_upload_bytes: 4096
${overrides.extraConfig ?? ""}`,
  );
  return { dir, configFile, journeysDir };
}

/**
 * A journeys directory (`name` in the fixture) holding only `dashboard.yaml`: the smoke suite's second
 * journey is then missing, so a run of it fails at `load_journey`.
 */
export function journeysWithOnlyDashboard(fixture: E2EFixture, name: string): string {
  const journeysDir = path.join(fixture.dir, name);
  mkdirSync(journeysDir, { recursive: true });
  writeFileSync(
    path.join(journeysDir, "dashboard.yaml"),
    readFileSync(path.join(fixture.journeysDir, "dashboard.yaml")),
  );
  return journeysDir;
}

/** Lets the `gated` environment's seeds through (the one waiting and all later ones) until closed again. */
export function openSeedGate(fixture: E2EFixture, open = true): void {
  const gate = path.join(fixture.dir, "gate");
  if (open) writeFileSync(gate, "");
  else rmSync(gate, { force: true });
}

/** The next `gated` seed to pass the gate exits with code 3 (the ones after it succeed again). */
export function failNextGatedSeed(fixture: E2EFixture): void {
  writeFileSync(path.join(fixture.dir, "fail-once"), "");
}

process.env.OUTPOST_TEST_OTHER_RUNNER_TOKEN = OTHER_RUNNER_TOKEN;

export async function startE2EApp(fixture: E2EFixture, env: Record<string, string> = {}): Promise<TestApp> {
  return startTestApp({ E2E_ENABLED: "true", E2E_CONFIG: fixture.configFile, ...env });
}

export function runnerHeaders(extra: Record<string, string> = {}): Record<string, string> {
  return {
    "x-e2e-runner-id": RUNNER_ID,
    authorization: `Bearer ${RUNNER_TOKEN}`,
    "x-e2e-protocol-version": "1",
    "content-type": "application/json",
    ...extra,
  };
}

/** `./outpost e2e …` as a child process against the app (the fixture's journeys unless told otherwise). */
export function runnerCli(app: TestApp, fixture: E2EFixture) {
  const root = path.resolve(import.meta.dir, "../..");
  function outpost(args: string[], options: { apiUrl?: string; env?: Record<string, string> } = {}) {
    const journeys =
      args[0] === "run" && !args.includes("--journeys-dir") ? ["--journeys-dir", fixture.journeysDir] : [];
    return Bun.spawn(
      [path.join(root, "outpost"), "e2e", ...args, ...journeys, "--api-url", options.apiUrl ?? app.url],
      {
        cwd: fixture.dir,
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          HOME: process.env.HOME ?? "/root",
          OUTPOST_E2E_RUNNER_ID: RUNNER_ID,
          OUTPOST_E2E_RUNNER_TOKEN: RUNNER_TOKEN,
          ...options.env,
        },
        stdout: "pipe",
        stderr: "pipe",
      },
    );
  }
  async function finish(proc: ReturnType<typeof outpost>) {
    const [stdout, stderr, code] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
      proc.exited,
    ]);
    return { stdout, stderr, code };
  }
  return { outpost, finish };
}

/** A small client for the E2E API of a test app. */
export function e2eClient(app: TestApp) {
  return {
    request(method: string, pathname: string, body?: unknown, headers: Record<string, string> = {}) {
      return app.fetch(pathname, {
        method,
        headers: runnerHeaders(headers),
        body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      });
    },
    async create(body: Record<string, unknown>, headers: Record<string, string> = {}) {
      const response = await this.request("POST", "/e2e/runs", body, headers);
      return {
        response,
        json: (await response.json()) as { data: Record<string, any>; error: Record<string, any> },
      };
    },
    async submit(runId: string, results: unknown[]) {
      const response = await this.request("POST", `/e2e/runs/${runId}/results`, { results });
      return {
        response,
        json: (await response.json()) as { data: Record<string, any>[]; error: Record<string, any> },
      };
    },
    async get(pathname: string) {
      const response = await this.request("GET", pathname);
      return { response, json: (await response.json()) as any };
    },
  };
}

/** The run holding an environment's lock, or undefined when it is free. */
export async function lockOf(
  app: TestApp,
  environment: string,
): Promise<{ run_id: string | null } | undefined> {
  const [row] = await app.database
    .sql`select run_id::text as run_id from e2e_environment_locks where environment_label = ${environment}`;
  return row as { run_id: string | null } | undefined;
}

/** A create in the `gated` environment, whose seed waits until the test opens its gate (openSeedGate). */
export const GATED_CREATE = { suite_id: "smoke", environment_label: "gated", trigger_source: "ci" };
export const PLAIN_CREATE = { ...GATED_CREATE, environment_label: "plain" };

/** The environment's lock once a create has taken it (polled: the create was only just sent). */
export async function inFlightLock(app: TestApp, environment: string) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const [lock] = await app.database.sql`
      select idempotency_key, run_id::text as run_id from e2e_environment_locks where environment_label = ${environment}`;
    if (lock || Date.now() > deadline) return lock;
    await Bun.sleep(20);
  }
}

/**
 * What the run-creation tests share: the fixture (with its `gated` seed), one with a short seed pickup
 * grace (`graceS`, so a wait that runs out ends quickly), the app and its client, and lock readers.
 */
export async function startCreateTests(graceS: number) {
  const fixture = writeE2EFixture();
  const shortGraceFixture = writeE2EFixture({ extraConfig: `seed_pickup_grace_s: ${graceS}\n` });
  const app = await startE2EApp(fixture);
  return {
    fixture,
    shortGraceFixture,
    app,
    api: e2eClient(app),
    sql: app.database.sql,
    lockOf: (environment: string) => lockOf(app, environment),
    inFlightLock: (environment: string) => inFlightLock(app, environment),
  };
}
