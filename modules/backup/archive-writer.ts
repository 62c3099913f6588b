import { createHash } from "node:crypto";
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import type { ArchiveFile } from "./model";
import { TAR_END, tarHeader, tarPadding } from "./tar";

/** Level 3: telemetry's JSON shrinks nearly as much as at the default level, for half the CPU. */
const GZIP_LEVEL = 3;

/**
 * Writes a gzip-compressed tar archive to a temporary file beside `target` (mode 0600, created
 * exclusively) and renames it into place only once it is complete and on disk: `target` is never a
 * half-written archive. `abort()` removes the temporary file.
 *
 * Each entry is compressed on its own, synchronously, as one gzip member (a gzip file may hold several;
 * gunzip and `tar -z` read them as one stream). Being synchronous is the backpressure: while an entry
 * is compressed nothing else runs, so the database connection is not read meanwhile. (postgres.js's
 * own backpressure on COPY TO leaves the connection paused for good when the last rows fill its buffer.)
 */
export class ArchiveWriter {
  readonly files: ArchiveFile[] = [];
  private readonly temp: string;
  private readonly fd: number;
  private written = 0;

  constructor(private readonly target: string) {
    this.temp = path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.partial`);
    this.fd = openSync(this.temp, "wx", 0o600);
  }

  /** Compressed bytes on disk so far. */
  get bytesWritten(): number {
    return this.written;
  }

  private write(bytes: Uint8Array): void {
    const compressed = gzipSync(bytes, { level: GZIP_LEVEL });
    for (let off = 0; off < compressed.length; ) off += writeSync(this.fd, compressed, off);
    this.written += compressed.length;
  }

  /** One entry; its size and SHA-256 join `files`. */
  entry(name: string, bytes: Uint8Array): ArchiveFile {
    this.write(Buffer.concat([tarHeader(name, bytes.length, new Date()), bytes, tarPadding(bytes.length)]));
    const file = {
      path: name,
      bytes: bytes.length,
      sha256: createHash("sha256").update(bytes).digest("hex"),
    };
    this.files.push(file);
    return file;
  }

  /** Ends the archive, syncs it to disk and moves it to its name. */
  finish(): void {
    this.write(TAR_END);
    fsyncSync(this.fd);
    closeSync(this.fd);
    renameSync(this.temp, this.target);
    const dir = openSync(path.dirname(this.target), "r");
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  }

  abort(): void {
    try {
      closeSync(this.fd);
    } catch {
      // already closed by finish()
    }
    rmSync(this.temp, { force: true });
  }
}
