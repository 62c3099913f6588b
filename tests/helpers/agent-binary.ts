import fs from "node:fs";
import path from "node:path";
import { isAlive } from "../../modules/platform/embedded-postgres";

const REPO_ROOT = path.resolve(import.meta.dir, "../..");
const DIST = path.join(REPO_ROOT, "dist");
const BUN = path.join(REPO_ROOT, "node_modules/.bin/bun");

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * Takes dist/.build-<arch>.lock (a directory: mkdir is atomic), waiting while another test process
 * holds it; a lock whose holder died is taken over.
 */
async function withLock<T>(name: string, work: () => T): Promise<T> {
  const lock = path.join(DIST, `.build-${name}.lock`);
  const owner = path.join(lock, "pid");
  fs.mkdirSync(DIST, { recursive: true });
  const deadline = Date.now() + 300_000;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      fs.writeFileSync(owner, String(process.pid));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      let holder = 0; // not written yet, or the lock just went away
      try {
        holder = Number(fs.readFileSync(owner, "utf8"));
      } catch {}
      if (holder > 0 && !isAlive(holder)) fs.rmSync(lock, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`${lock} is still held after 300 s`);
      else await Bun.sleep(250);
    }
  }
  try {
    return work();
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * The compiled agent for `arch` (`npm run build:agent -- --arch <arch>`), built once and reused while it
 * is newer than every file under agent/ and shared/ (delete dist/outpost-agent* to force a rebuild). Test files run
 * in parallel workers: one builds while the others wait, and none runs a half-written binary.
 */
export async function agentBinary(arch: "x64" | "arm64"): Promise<string> {
  const binary = path.join(DIST, `outpost-agent-linux-${arch}`);
  return withLock(arch, () => {
    // The agent's sources are agent/ and what it imports from shared/.
    const newest = Math.max(...["agent", "shared"].map((dir) => newestSource(path.join(REPO_ROOT, dir))));
    const fresh = fs.existsSync(binary) && fs.statSync(binary).mtimeMs > newest;
    if (!fresh) {
      const r = Bun.spawnSync([BUN, path.join(REPO_ROOT, "scripts/build-agent.ts"), "--arch", arch], {
        cwd: REPO_ROOT,
        stdout: "pipe",
        stderr: "pipe",
      });
      if (r.exitCode !== 0) throw new Error(`build:agent --arch ${arch} failed: ${r.stderr.toString()}`);
    }
    return binary;
  });
}
