// Startup figure: seconds from `npm start` (the README's first line) to a 200 from /readyz, on a
// warm machine, with the embedded PostgreSQL in a DATA_DIR that already exists (a restart) and,
// first, in an empty one (the very first start, including initdb). The same for `./outpost start`
// (what `npm start` runs), so npm's own share shows.
// Usage: node_modules/.bin/bun bench/startup.ts [runs=5]
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const runs = Number(process.argv[2] ?? 5);
const repo = path.resolve(import.meta.dir, "..");
const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-bench-startup-"));
const port = 24_000 + Math.floor(Math.random() * 1000);

const COMMANDS = {
  "npm start": ["npm", "start"],
  "./outpost start": [path.join(repo, "outpost"), "start"],
} as const;

async function once(command: readonly string[]): Promise<number> {
  const started = performance.now();
  // Its own process group, stopped as Ctrl-C stops it in a terminal: SIGINT to the whole group.
  const child = spawn(command[0]!, command.slice(1), {
    cwd: repo,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" },
    stdio: "ignore",
    detached: true,
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
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
  try {
    process.kill(-child.pid!, "SIGINT");
  } catch {
    // already gone
  }
  await exited;
  // npm may exit before its child has finished: wait for the port and the embedded PostgreSQL.
  const postmaster = path.join(dataDir, "postgres", "postmaster.pid");
  const stopDeadline = performance.now() + 30_000;
  while (
    performance.now() < stopDeadline &&
    (existsSync(postmaster) ||
      (await fetch(`http://127.0.0.1:${port}/healthz`).then(
        () => true,
        () => false,
      )))
  )
    await Bun.sleep(50);
  if (Number.isNaN(elapsed)) throw new Error(`${command.join(" ")} did not become ready within 60 s`);
  return elapsed / 1000;
}

try {
  const first = await once(COMMANDS["npm start"]);
  console.log(`npm start, first start (initdb + migrations): ${first.toFixed(2)} s`);
  for (const [name, command] of Object.entries(COMMANDS)) {
    const times: number[] = [];
    for (let i = 0; i < runs; i++) times.push(await once(command));
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)]!;
    console.log(
      `${name}, restart, ${runs} runs: median ${median.toFixed(2)} s, min ${times[0]!.toFixed(2)} s, max ${times.at(-1)!.toFixed(2)} s`,
    );
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
