import { createHash } from "node:crypto";
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import { constants, createGzip, type Gzip } from "node:zlib";
import type { ArchiveFile } from "./model";
import { TAR_END, tarHeader, tarPadding } from "./tar";

/**
 * Writes a gzip-compressed tar archive to a temporary file beside `target` (mode 0600, created
 * exclusively) and renames it into place only once it is complete and on disk: `target` is never a
 * half-written archive. `abort()` removes the temporary file.
 */
export class ArchiveWriter {
  readonly files: ArchiveFile[] = [];
  private readonly temp: string;
  private readonly fd: number;
  private readonly gzip: Gzip;
  private written = 0;
  private failure: Error | undefined;
  private readonly drained: Promise<void>;

  constructor(
    private readonly target: string,
    level = 3,
  ) {
    this.temp = path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.partial`);
    this.fd = openSync(this.temp, "wx", 0o600);
    // Level 3: telemetry's JSON shrinks about as much as at the default level for half the CPU.
    this.gzip = createGzip({ level, chunkSize: 1 << 20, flush: constants.Z_NO_FLUSH });
    this.gzip.on("data", (chunk: Buffer) => {
      try {
        for (let off = 0; off < chunk.length; ) off += writeSync(this.fd, chunk, off);
        this.written += chunk.length;
      } catch (error) {
        this.failure = error as Error;
        this.gzip.destroy(this.failure);
      }
    });
    this.drained = new Promise((resolve, reject) => {
      this.gzip.on("end", resolve);
      this.gzip.on("error", reject);
    });
    this.drained.catch(() => {});
  }

  /** Compressed bytes on disk so far. */
  get bytesWritten(): number {
    return this.written;
  }

  private async push(bytes: Uint8Array): Promise<void> {
    if (this.failure) throw this.failure;
    if (!this.gzip.write(bytes)) await new Promise<void>((resolve) => this.gzip.once("drain", resolve));
  }

  /** One entry from pieces whose total is `size` bytes; its checksum joins `files`. */
  async entry(name: string, pieces: Iterable<Uint8Array>, size: number): Promise<ArchiveFile> {
    const hash = createHash("sha256");
    await this.push(tarHeader(name, size, new Date()));
    let bytes = 0;
    for (const piece of pieces) {
      hash.update(piece);
      bytes += piece.length;
      await this.push(piece);
    }
    if (bytes !== size) throw new Error(`archive entry ${name}: ${bytes} bytes, announced ${size}`);
    await this.push(tarPadding(size));
    const file = { path: name, bytes: size, sha256: hash.digest("hex") };
    this.files.push(file);
    return file;
  }

  /** Ends the archive, syncs it to disk and moves it to its name. */
  async finish(): Promise<void> {
    await this.push(TAR_END);
    this.gzip.end();
    await this.drained;
    if (this.failure) throw this.failure;
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
    this.gzip.destroy();
    try {
      closeSync(this.fd);
    } catch {
      // already closed by finish()
    }
    rmSync(this.temp, { force: true });
  }
}
