import { afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/**
 * Makes new directories in the system's temp directory (`prefix` + random), all removed after the
 * calling file's tests. Call at the top of a file (it registers afterAll); the maker may be called
 * anywhere, tests included.
 */
export function tempDirs(prefix: string): () => string {
  const made: string[] = [];
  afterAll(() => {
    for (const dir of made) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(path.join(tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
}

/** One such directory (see tempDirs). */
export const tempDir = (prefix: string): string => tempDirs(prefix)();
