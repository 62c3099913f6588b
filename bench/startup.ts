// Startup figure: seconds from `./outpost start` (what `npm start` runs) to a 200 from /readyz,
// on a warm machine, with the embedded PostgreSQL in a DATA_DIR that already exists (a restart)
// and, first, in an empty one (the very first start, including initdb).
// Usage: node_modules/.bin/bun bench/startup.ts [runs=5]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const runs = Number(process.argv[2] ?? 5);
const repo = path.resolve(import.meta.dir, "..");
const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-bench-startup-"));
const port = 24_000 + Math.floor(Math.random() * 1000);

async function once(): Promise<number> {
  const started = performance.now();
  const child = Bun.spawn([path.join(repo, "outpost"), "start"], {
    cwd: repo,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" },
    stdout: "ignore",
    stderr: "ignore",
  });
  const deadline = started + 60_000;
  let elapsed = Number.NaN;
  while (performance.now() < deadline && child.exitCode === null) {
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) {
      elapsed = performance.now() - started;
      break;
    }
    await Bun.sleep(10);
  }
  child.kill("SIGINT");
  await child.exited;
  if (Number.isNaN(elapsed)) throw new Error("Outpost did not become ready within 60 s");
  return elapsed / 1000;
}

try {
  const first = await once();
  console.log(`first start (initdb + migrations): ${first.toFixed(2)} s`);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push(await once());
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  console.log(
    `restart, ${runs} runs: median ${median.toFixed(2)} s, min ${times[0]!.toFixed(2)} s, max ${times.at(-1)!.toFixed(2)} s`,
  );
} finally {
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(`${dataDir}`, { recursive: true, force: true });
}
