import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "./probes";

const ROOT = path.resolve(import.meta.dir, "../..");

/** The METRICS_TOKEN a bench server is given when the benchmark reads its /metrics. */
export const BENCH_METRICS_TOKEN = "bench-metrics-token-0123456789";
/** The SECRET_KEY of a bench server (a benchmark that signs a session or CSRF token for it needs it). */
export const BENCH_SECRET_KEY = "bench-secret-key-bench-secret-key-0123456789";

/**
 * Outpost (web role: HTTP only, unless `extraEnv` names another) in its own process on a free loopback
 * port, ready to serve; its stop (SIGTERM, then SIGKILL after 15 s) and data directory go on `cleanups`,
 * and `stop` ends it earlier.
 */
export async function startBenchServer({
  databaseUrl,
  extraEnv,
  cleanups,
}: {
  databaseUrl: string;
  extraEnv: Record<string, string>;
  cleanups: (() => Promise<void> | void)[];
}): Promise<{ child: ChildProcess; url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-bench-data-"));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  // BENCH_SERVER_PROFILE=<dir>: the server writes a CPU profile (markdown) there when it stops.
  const profile = process.env.BENCH_SERVER_PROFILE
    ? ["--cpu-prof-md", `--cpu-prof-dir=${process.env.BENCH_SERVER_PROFILE}`]
    : [];
  const child: ChildProcess = spawn(
    path.join(ROOT, "node_modules/.bin/bun"),
    [...profile, path.join(ROOT, "cli/main.ts"), "start"],
    {
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        DATA_DIR: dataDir,
        PORT: String(port),
        HOST: "127.0.0.1",
        OUTPOST_ROLE: "web",
        // Every simulated device registers (twice) from this one address.
        DEVICE_REGISTER_RATE_LIMIT: "1000000",
        // The comparison rounds add heartbeats per device and minute: never refuse them for that.
        DEVICE_HEARTBEAT_RATE_LIMIT: "1000000",
        LOG_LEVEL: "warn",
        SECRET_KEY: BENCH_SECRET_KEY,
        NODE_ENV: "production",
        // As the `outpost` launcher sets it (bun is started directly here, for the profile flags).
        MIMALLOC_PURGE_DELAY: process.env.MIMALLOC_PURGE_DELAY ?? "1000",
        ...extraEnv,
      },
      stdio: ["ignore", "ignore", "inherit"],
    },
  );
  const stop = async () => {
    if (child.exitCode !== null) return;
    child.kill("SIGTERM");
    await new Promise((resolve) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        resolve(undefined);
      }, 15_000);
      child.once("exit", () => {
        clearTimeout(timer);
        resolve(undefined);
      });
    });
  };
  cleanups.push(stop);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (i > 600 || child.exitCode !== null) throw new Error("Outpost did not become ready");
    await Bun.sleep(100);
  }
  return { child, url, stop };
}
