import { describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parse } from "yaml";
import { RUNNER_ID, RUNNER_TOKEN, startE2EApp, writeE2EFixture } from "./fixtures";
import { parseJUnit } from "./junit-schema";

// docs/e2e.md's CI recipes, run as written: the YAML blocks are taken from the doc, the CI's
// variables get test values, and the shell lines run in a folder standing for the checkout
// (`./outpost` there execs this repo's) against a server this test starts.
const ROOT = path.resolve(import.meta.dir, "../..");
const fixture = writeE2EFixture({
  configYaml: `protocol_versions: ["1"]
allowed_environments: [staging, ci]
suites:
  smoke: [auth, dashboard]
journeys_dir: ${path.join(ROOT, "e2e/journeys")}
runners:
  ${RUNNER_ID}: ${RUNNER_TOKEN}
`,
});
const app = await startE2EApp(fixture);
const operatorToken = await app.token("operator");

function recipe(heading: string): any {
  const doc = readFileSync(path.join(ROOT, "docs/e2e.md"), "utf8");
  const section = doc.slice(doc.indexOf(`### ${heading}\n`));
  const block = /```yaml\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error(`no yaml block under ${heading}`);
  return parse(block[1]!);
}

/** The values a project stores as CI variables and secrets (docs/e2e.md's table). */
const settings: Record<string, string> = {
  OUTPOST_URL: app.url,
  OUTPOST_E2E_RUNNER_ID: RUNNER_ID,
  OUTPOST_E2E_RUNNER_TOKEN: RUNNER_TOKEN,
  OUTPOST_API_TOKEN: operatorToken,
};

/** A folder standing for the CI's checkout of Outpost. */
function checkout(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "outpost-ci-checkout-"));
  writeFileSync(path.join(dir, "outpost"), `#!/bin/sh\nexec '${path.join(ROOT, "outpost")}' "$@"\n`);
  chmodSync(path.join(dir, "outpost"), 0o755);
  return dir;
}

async function shell(script: string, cwd: string, env: Record<string, string>) {
  const proc = Bun.spawn(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], {
    cwd,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/root", CI: "true", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill(), 60_000);
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  return { stdout, stderr, code };
}

async function runsWithKey(key: string) {
  return app.database.sql`
    select id::text as id, environment_label, trigger_source, status, metadata
    from e2e_runs where idempotency_key = ${key}`;
}

describe("docs/e2e.md CI recipes", () => {
  test("GitHub Actions: the E2E step runs as written; branch → environment, a re-run reuses the run, the report is where the report step reads it", async () => {
    const workflow = recipe("GitHub Actions");
    const job = workflow.jobs.e2e;
    // ${{ vars.X }} and ${{ secrets.X }} become the project's settings.
    const env = Object.fromEntries(
      Object.entries(job.env as Record<string, string>).map(([name, value]) => [
        name,
        value.replace(/\$\{\{\s*(?:vars|secrets)\.(\w+)\s*\}\}/g, (_, key) => settings[key] ?? ""),
      ]),
    );
    const step = job.steps.find((s: any) => s.name === "E2E journeys");
    const reportPath: string = job.steps.find((s: any) => s.name === "Test report").with.report_paths;
    const artifactPath: string = job.steps.find((s: any) => s.name === "Journey logs").with.path;
    const dir = checkout();
    try {
      const ci = {
        GITHUB_REF_NAME: "main",
        GITHUB_RUN_ID: "7001",
        GITHUB_RUN_ATTEMPT: "1",
        GITHUB_JOB: "e2e",
        GITHUB_SHA: "0123456789abcdef0123456789abcdef01234567",
      };
      const first = await shell(step.run, dir, { ...env, ...ci });
      expect(first.code).toBe(0);
      const [run] = await runsWithKey("github-7001-e2e");
      expect(run).toMatchObject({ environment_label: "staging", trigger_source: "ci", status: "passed" });
      expect(run!.metadata).toMatchObject({ commit: ci.GITHUB_SHA, branch: "main" });
      expect(first.stderr).toContain(`console: ${app.url}/e2e?run=${run!.id}`);
      const report = parseJUnit(readFileSync(path.join(dir, reportPath), "utf8"));
      expect(report.children[0]!.attributes).toMatchObject({ id: run!.id, tests: "2", failures: "0" });
      expect(readFileSync(path.join(dir, artifactPath, "e2e-junit.xml"), "utf8")).toContain("<testsuite");

      // "Re-run failed jobs": same run id, next attempt.
      const rerun = await shell(step.run, dir, { ...env, ...ci, GITHUB_RUN_ATTEMPT: "2" });
      expect(rerun.code).toBe(0);
      expect(rerun.stderr).toContain(`E2E run ${run!.id} reused`);
      expect(await runsWithKey("github-7001-e2e")).toHaveLength(1);

      const branch = await shell(step.run, dir, {
        ...env,
        ...ci,
        GITHUB_REF_NAME: "feature/x",
        GITHUB_RUN_ID: "7002",
      });
      expect(branch.code).toBe(0);
      expect((await runsWithKey("github-7002-e2e"))[0]).toMatchObject({ environment_label: "ci" });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  test("GitLab CI: the script lines run as written; the JUnit report is the job's reports:junit file, also when the run fails", async () => {
    const job = recipe("GitLab CI").e2e;
    // GitLab expands $VARS inside `variables`; the shell does the same here.
    const variables = Object.entries(job.variables as Record<string, string>)
      .map(([name, value]) => `export ${name}="${value}"`)
      .join("\n");
    const script = `${variables}\n${(job.script as string[]).join("\n")}`;
    const reportPath: string = job.artifacts.reports.junit;
    expect(job.artifacts.when).toBe("always");
    const dir = checkout();
    try {
      const ci = {
        ...settings,
        CI_COMMIT_REF_NAME: "feature/y",
        CI_PIPELINE_ID: "8801",
        CI_JOB_NAME: "e2e",
        CI_COMMIT_SHA: "89abcdef0123456789abcdef0123456789abcdef",
      };
      const first = await shell(script, dir, ci);
      expect(first.code).toBe(0);
      const [run] = await runsWithKey("gitlab-8801-e2e");
      expect(run).toMatchObject({ environment_label: "ci", status: "passed" });
      expect(run!.metadata).toMatchObject({ commit: ci.CI_COMMIT_SHA, branch: "feature/y" });
      expect(parseJUnit(readFileSync(path.join(dir, reportPath), "utf8")).children[0]!.attributes.id).toBe(
        run!.id,
      );

      const retry = await shell(script, dir, ci);
      expect(retry.code).toBe(0);
      expect(await runsWithKey("gitlab-8801-e2e")).toHaveLength(1);

      // Without the operator token the journeys' cleanup fails: the job fails, the report is still there.
      rmSync(path.join(dir, reportPath));
      const failing = await shell(script, dir, {
        ...ci,
        CI_COMMIT_REF_NAME: "main",
        CI_PIPELINE_ID: "8802",
        OUTPOST_API_TOKEN: "",
      });
      expect(failing.code).toBe(1);
      const [failed] = await runsWithKey("gitlab-8802-e2e");
      expect(failed).toMatchObject({ environment_label: "staging", status: "failed" });
      const report = parseJUnit(readFileSync(path.join(dir, reportPath), "utf8"));
      expect(Number(report.children[0]!.attributes.failures)).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
