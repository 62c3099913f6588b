import { afterAll } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";
import postgres from "postgres";
import { TAR_END, tarHeader, tarPadding } from "../../modules/backup/tar";
import { clusterUrl, databaseUrl } from "../helpers/cluster";

/** An empty database on the test cluster (never migrated): what an operator's new external server holds. */
export async function emptyDatabase(): Promise<{ name: string; url: string }> {
  const name = `backup_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const admin = postgres(clusterUrl(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  afterAll(async () => {
    const cleanup = postgres(clusterUrl(), { max: 1, onnotice: () => {} });
    await cleanup.unsafe(`drop database if exists ${name} with (force)`);
    await cleanup.end();
  });
  return { name, url: databaseUrl(name) };
}

/** The entries of a (small) archive, whole, in order: for tests that take one apart. */
export function archiveEntries(file: string): { name: string; bytes: Buffer }[] {
  const tar = gunzipSync(readFileSync(file));
  const entries: { name: string; bytes: Buffer }[] = [];
  for (let at = 0; at + 512 <= tar.length; ) {
    const header = tar.subarray(at, at + 512);
    if (header.every((b) => b === 0)) break;
    const name = header.subarray(0, 100).toString("utf8").replace(/\0.*$/s, "");
    const size = Number.parseInt(header.subarray(124, 136).toString("utf8").replace(/\0.*$/s, "").trim(), 8);
    entries.push({ name, bytes: Buffer.from(tar.subarray(at + 512, at + 512 + size)) });
    at += 512 + size + tarPadding(size).length;
  }
  return entries;
}

/** Writes entries back as an archive (what a tampered or hand-edited backup looks like). */
export function writeArchive(file: string, entries: { name: string; bytes: Buffer }[]): void {
  const parts: Uint8Array[] = [];
  for (const entry of entries) {
    parts.push(
      tarHeader(entry.name, entry.bytes.length, new Date()),
      entry.bytes,
      tarPadding(entry.bytes.length),
    );
  }
  parts.push(TAR_END);
  writeFileSync(file, gzipSync(Buffer.concat(parts)), { mode: 0o600 });
}
