import fs from "node:fs";
import { BuiltinIoError } from "../scripts/sandbox.ts";

let mountCache: { at: number; mounts: string[] } | null = null;

/** Mount points from /proc/self/mounts (octal escapes decoded), re-read at most once a second. */
export function listMountPoints(): string[] {
  if (mountCache && Date.now() - mountCache.at < 1000) return mountCache.mounts;
  const mounts = readMountPoints();
  mountCache = { at: Date.now(), mounts };
  return mounts;
}

function readMountPoints(): string[] {
  let text: string;
  try {
    text = fs.readFileSync("/proc/self/mounts", "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) =>
      (line.split(" ")[1] ?? "").replace(/\\([0-7]{3})/g, (_, o: string) =>
        String.fromCharCode(Number.parseInt(o, 8)),
      ),
    );
}

/** `statfs(mount)`: filesystem block/inode counts, only for paths that are current mount points. */
export function statfsBuiltin(rawPath: unknown) {
  if (typeof rawPath !== "string" || !rawPath.startsWith("/"))
    throw new BuiltinIoError("statfs: path must be absolute");
  if (!listMountPoints().includes(rawPath)) throw new BuiltinIoError(`statfs: not a mount point: ${rawPath}`);
  try {
    const s = fs.statfsSync(rawPath);
    return {
      type: s.type,
      bsize: s.bsize,
      blocks: s.blocks,
      bfree: s.bfree,
      bavail: s.bavail,
      files: s.files,
      ffree: s.ffree,
    };
  } catch (err) {
    throw new BuiltinIoError(`statfs: ${rawPath}: ${(err as NodeJS.ErrnoException).code ?? "error"}`);
  }
}

/** `sleep(ms)`: resolves after at most 1000 ms (counts against the script's time limit). */
export function sleepBuiltin(rawMs: unknown, signal: AbortSignal): Promise<null> {
  const ms = Math.max(0, Math.min(1000, Number(rawMs) || 0));
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    signal.addEventListener("abort", () => clearTimeout(timer), { once: true });
  });
}

const MEMO_MAX_CHARS = 64 * 1024;

/** Per-script memo: small JSON values kept in agent memory between runs (e.g. the previous CPU sample). */
export class ScriptMemo {
  private readonly store = new Map<string, Map<string, string>>();

  get(script: string, key: unknown): unknown {
    if (typeof key !== "string") throw new BuiltinIoError("memo_get: key must be a string");
    const raw = this.store.get(script)?.get(key);
    return raw === undefined ? null : JSON.parse(raw);
  }

  set(script: string, key: unknown, value: unknown): null {
    if (typeof key !== "string" || key.length > 128)
      throw new BuiltinIoError("memo_set: key must be a string of at most 128 characters");
    const raw = JSON.stringify(value ?? null);
    let bucket = this.store.get(script);
    if (!bucket) {
      bucket = new Map();
      this.store.set(script, bucket);
    }
    const others = [...bucket.entries()].filter(([k]) => k !== key).reduce((n, [, v]) => n + v.length, 0);
    if (others + raw.length > MEMO_MAX_CHARS)
      throw new BuiltinIoError(`memo_set: memo of a script is limited to ${MEMO_MAX_CHARS} characters`);
    bucket.set(key, raw);
    return null;
  }
}
