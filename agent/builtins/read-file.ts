import fs from "node:fs";
import path from "node:path";
import { BuiltinIoError } from "../scripts/sandbox.ts";

export interface ReadFilePolicy {
  /** Exact absolute paths, or directory prefixes ending in "/" (everything below is allowed). */
  allowlist: string[];
  /** Paths that are never readable, even when allowlisted (agent state, credentials, config). */
  denylist: string[];
  maxBytes: number;
}

function matches(entries: string[], p: string): boolean {
  return entries.some((entry) => (entry.endsWith("/") ? p.startsWith(entry) : p === entry));
}

function underAny(entries: string[], p: string): boolean {
  return entries.some((entry) => p === entry || p.startsWith(entry.endsWith("/") ? entry : `${entry}/`));
}

/**
 * `read_file(path)`: returns the file as UTF-8 text. The path must be absolute, normalised (no "..")
 * and allowlisted; when it is allowed through a directory prefix, its real path (symlinks resolved)
 * must be allowlisted too. The deny list always wins. Reads at most `maxBytes`.
 */
export function readFileBuiltin(policy: ReadFilePolicy, rawPath: unknown): string {
  if (typeof rawPath !== "string" || rawPath === "")
    throw new BuiltinIoError("read_file: path must be a non-empty string");
  if (!rawPath.startsWith("/")) throw new BuiltinIoError(`read_file: path must be absolute: ${rawPath}`);
  const normalized = path.posix.normalize(rawPath);
  if (normalized !== rawPath || rawPath.includes("\0")) {
    throw new BuiltinIoError(`read_file: path must be normalised (no "..", "//" or "."): ${rawPath}`);
  }
  if (!matches(policy.allowlist, normalized))
    throw new BuiltinIoError(`read_file: path is not allowlisted: ${rawPath}`);
  let real: string;
  try {
    real = fs.realpathSync(normalized);
  } catch (err) {
    throw new BuiltinIoError(
      `read_file: cannot read ${rawPath}: ${(err as NodeJS.ErrnoException).code ?? "error"}`,
    );
  }
  if (underAny(policy.denylist, normalized) || underAny(policy.denylist, real)) {
    throw new BuiltinIoError(`read_file: path is not allowlisted: ${rawPath}`);
  }
  const exact = policy.allowlist.includes(normalized);
  if (!exact && !matches(policy.allowlist, real)) {
    throw new BuiltinIoError(`read_file: path resolves outside the allowlist: ${rawPath}`);
  }
  let fd: number;
  try {
    fd = fs.openSync(real, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (err) {
    throw new BuiltinIoError(
      `read_file: cannot read ${rawPath}: ${(err as NodeJS.ErrnoException).code ?? "error"}`,
    );
  }
  try {
    if (!fs.fstatSync(fd).isFile()) throw new BuiltinIoError(`read_file: not a regular file: ${rawPath}`);
    const buf = Buffer.alloc(policy.maxBytes + 1);
    let total = 0;
    while (total <= policy.maxBytes) {
      const n = fs.readSync(fd, buf, total, buf.length - total, null);
      if (n === 0) break;
      total += n;
    }
    if (total > policy.maxBytes)
      throw new BuiltinIoError(`read_file: ${rawPath} exceeds ${policy.maxBytes} bytes`);
    return buf.subarray(0, total).toString("utf8");
  } finally {
    fs.closeSync(fd);
  }
}
