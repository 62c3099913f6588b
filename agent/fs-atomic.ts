import fs from "node:fs";
import path from "node:path";

export interface AtomicWriteOptions {
  mode: number;
  /** Mode of the parent directory when it has to be created. */
  dirMode?: number;
  /** Owner to give the file (only effective when running as root), e.g. the owner of an authorized_keys file. */
  owner?: { uid: number; gid: number };
}

/**
 * Write a file atomically: write a temporary file in the same directory with the final mode,
 * fsync it, rename it over the target and fsync the directory.
 */
export function writeFileAtomic(target: string, data: string, options: AtomicWriteOptions): void {
  const dir = path.dirname(target);
  fs.mkdirSync(dir, { recursive: true, mode: options.dirMode ?? 0o700 });
  const tmp = path.join(dir, `.${path.basename(target)}.tmp-${process.pid}-${Date.now()}`);
  const fd = fs.openSync(tmp, "wx", options.mode);
  try {
    fs.writeSync(fd, data);
    fs.fchmodSync(fd, options.mode);
    if (options.owner && process.getuid?.() === 0) fs.fchownSync(fd, options.owner.uid, options.owner.gid);
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  try {
    fs.renameSync(tmp, target);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  try {
    const dirFd = fs.openSync(dir, "r");
    fs.fsyncSync(dirFd);
    fs.closeSync(dirFd);
  } catch {
    // Directory fsync is best effort (not supported on every filesystem).
  }
}
