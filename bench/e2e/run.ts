// E2E service figures against a real `./outpost start` (embedded PostgreSQL, all roles, loopback):
//  1. create-to-201 latency of POST /e2e/runs with a trivial seed (`true`, run by the e2e_seed job),
//     sequential, each run cancelled afterwards (untimed) to free the environment lock;
//  2. results submissions per second on ONE run (they serialise on the run row), C concurrent clients.
// Usage: node_modules/.bin/bun bench/e2e/run.ts [creates=50] [seconds=5] [concurrency=8]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const creates = Number(process.argv[2] ?? 50);
const seconds = Number(process.argv[3] ?? 5);
const concurrency = Number(process.argv[4] ?? 8);
const repo = path.resolve(import.meta.dir, "../..");
const dir = mkdtempSync(path.join(tmpdir(), "outpost-bench-e2e-"));
const port = 25_000 + Math.floor(Math.random() * 1000);
const token = "bench-runner-token-0123456789abcdefghijkl";
const journeys = Array.from({ length: 20 }, (_, i) => `j${i}`);
mkdirSync(path.join(dir, "journeys"));
for (const j of journeys) {
  writeFileSync(
    path.join(dir, "journeys", `${j}.yaml`),
    `id: ${j}\nsteps:\n  - action: fetch_dashboard\n    expect: dashboard_payload\n`,
  );
}
writeFileSync(
  path.join(dir, "config.yaml"),
  `allowed_environments: [seeded, plain]
environments:
  seeded: { seed: ["true"] }
  plain: {}
suites:
  one: [j0]
  twenty: [${journeys.join(", ")}]
runners:
  bench: ${token}
`,
);
const base = `http://127.0.0.1:${port}`;
const headers = {
  "x-e2e-runner-id": "bench",
  authorization: `Bearer ${token}`,
  "x-e2e-protocol-version": "1",
  "content-type": "application/json",
};
const call = (method: string, pathname: string, body?: unknown) =>
  fetch(`${base}${pathname}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });

function percentile(sorted: number[], p: number) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const child = Bun.spawn([path.join(repo, "outpost"), "start"], {
  cwd: repo,
  env: {
    ...process.env,
    DATA_DIR: path.join(dir, "data"),
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    E2E_ENABLED: "true",
    E2E_CONFIG: path.join(dir, "config.yaml"),
  },
  stdout: "ignore",
  stderr: "inherit",
});
try {
  const deadline = Date.now() + 60_000;
  while (
    !(await fetch(`${base}/readyz`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error("Outpost did not start");
    await Bun.sleep(50);
  }
  for (const [environment, label] of [
    ["seeded", "with a trivial seed job (`true`)"],
    ["plain", "without a seed (lock + persistence only)"],
  ] as const) {
    const times: number[] = [];
    for (let i = 0; i < creates + 3; i++) {
      const started = performance.now();
      const response = await call("POST", "/e2e/runs", {
        suite_id: "one",
        environment_label: environment,
        trigger_source: "ci",
      });
      const elapsed = performance.now() - started;
      if (response.status !== 201)
        throw new Error(`create answered ${response.status}: ${await response.text()}`);
      const { data } = (await response.json()) as { data: { id: string } };
      await call("POST", `/e2e/runs/${data.id}/cancel`);
      if (i >= 3) times.push(elapsed); // the first few warm up connections and the JIT
    }
    times.sort((a, b) => a - b);
    console.log(
      `create-to-201 ${label}, ${creates} sequential: p50 ${percentile(times, 50).toFixed(1)} ms, p95 ${percentile(times, 95).toFixed(1)} ms, min ${times[0]!.toFixed(1)} ms, max ${times.at(-1)!.toFixed(1)} ms`,
    );
  }

  const created = await call("POST", "/e2e/runs", {
    suite_id: "twenty",
    environment_label: "plain",
    trigger_source: "ci",
  });
  const runId = ((await created.json()) as { data: { id: string } }).data.id;
  let done = 0;
  let failed = 0;
  const latencies: number[] = [];
  const stopAt = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      let n = worker;
      while (performance.now() < stopAt) {
        const journey = journeys[n++ % journeys.length]!;
        const started = performance.now();
        const response = await call("POST", `/e2e/runs/${runId}/results`, {
          results: [
            { journey_id: journey, status: n % 2 ? "passed" : "failed", duration_ms: 5, failure_step: null },
          ],
        });
        await response.arrayBuffer();
        latencies.push(performance.now() - started);
        if (response.status === 202) done++;
        else failed++;
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  console.log(
    `results submissions on one run (20 journeys, ${concurrency} concurrent clients, ${seconds} s): ${(done / seconds).toFixed(0)} /s accepted, ${failed} rejected, p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms`,
  );
} finally {
  child.kill("SIGINT");
  await child.exited;
  rmSync(dir, { recursive: true, force: true });
}
