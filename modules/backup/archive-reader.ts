import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { createGunzip } from "node:zlib";
import { BackupError, type KeyFile, MANIFEST_ENTRY, type Manifest, manifestCheck } from "./model";
import { readTar, type TarEntry } from "./tar";

/** The archive's tar entries, decompressed as they are read. */
function entries(file: string): AsyncGenerator<TarEntry> {
  const gunzip = createGunzip();
  const input = createReadStream(file);
  input.on("error", (error) => gunzip.destroy(error));
  input.pipe(gunzip);
  return readTar(gunzip as AsyncIterable<Uint8Array>);
}

/** Any failure to read the archive (gzip, tar, the file itself) is one refusal: it is damaged. */
async function readingArchive<T>(file: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof BackupError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new BackupError(
      "corrupt",
      `${file} is damaged or not an Outpost backup (${reason}); nothing was restored`,
    );
  }
}

export interface VerifiedArchive {
  manifest: Manifest;
  /** DATA_DIR's keys the archive holds (a few hundred bytes each). */
  keys: Map<KeyFile, Uint8Array>;
}

/**
 * Reads the whole archive once and checks it before anything is touched: the manifest (written last)
 * must list exactly the entries met, in order, each with its size and SHA-256.
 */
export async function verifyArchive(file: string): Promise<VerifiedArchive> {
  return readingArchive(file, async () => {
    const seen: { path: string; bytes: number; sha256: string }[] = [];
    const keys = new Map<KeyFile, Uint8Array>();
    let manifestText: string | undefined;
    for await (const entry of entries(file)) {
      if (manifestText !== undefined)
        throw new BackupError("corrupt", `${file} has entries after its manifest; nothing was restored`);
      const hash = createHash("sha256");
      const kept: Uint8Array[] = [];
      const small = entry.name === MANIFEST_ENTRY || entry.name.startsWith("data/");
      for await (const piece of entry.body()) {
        hash.update(piece);
        if (small && entry.size <= 1 << 20) kept.push(piece);
      }
      if (entry.name === MANIFEST_ENTRY) manifestText = Buffer.concat(kept).toString("utf8");
      else {
        seen.push({ path: entry.name, bytes: entry.size, sha256: hash.digest("hex") });
        if (entry.name.startsWith("data/")) keys.set(entry.name.slice(5) as KeyFile, Buffer.concat(kept));
      }
    }
    if (manifestText === undefined)
      throw new BackupError(
        "not_a_backup",
        `${file} has no manifest: not an Outpost backup, or one cut short; nothing was restored`,
      );
    let manifest: unknown;
    try {
      manifest = JSON.parse(manifestText);
    } catch {
      manifest = undefined;
    }
    if (!manifestCheck.Check(manifest))
      throw new BackupError("not_a_backup", `${file}: its manifest is not an Outpost backup manifest`);
    const listed = manifest.files;
    for (let i = 0; i < Math.max(listed.length, seen.length); i++) {
      const want = listed[i];
      const got = seen[i];
      if (!want || !got || want.path !== got.path || want.bytes !== got.bytes || want.sha256 !== got.sha256)
        throw new BackupError(
          "corrupt",
          `${file} is corrupt: ${want?.path ?? got?.path} does not match the manifest's size and checksum; nothing was restored`,
        );
    }
    return { manifest, keys };
  });
}

/**
 * The archive's entries again, for the restore: each checked against the manifest as it streams by
 * (the file could have changed since it was verified), through `onEntry`, which reads the body.
 */
export async function streamArchive(
  file: string,
  manifest: Manifest,
  onEntry: (name: string, body: AsyncGenerator<Uint8Array>) => Promise<void>,
): Promise<void> {
  const expected = new Map(manifest.files.map((f) => [f.path, f.sha256]));
  await readingArchive(file, async () => {
    for await (const entry of entries(file)) {
      if (entry.name === MANIFEST_ENTRY) continue;
      const hash = createHash("sha256");
      const hashed = async function* () {
        for await (const piece of entry.body()) {
          hash.update(piece);
          yield piece;
        }
      };
      const body = hashed();
      await onEntry(entry.name, body);
      for await (const _ of body) void _; // what onEntry left unread, hashed too
      if (hash.digest("hex") !== expected.get(entry.name))
        throw new BackupError(
          "corrupt",
          `${file} changed while it was restored (${entry.name}); nothing was restored`,
        );
    }
  });
}
