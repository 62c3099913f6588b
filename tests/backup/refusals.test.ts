// `./outpost restore` refuses, with one clear line and exit 2, a damaged archive (checksums are
// checked before anything is touched), an archive from a newer Outpost and a target that is not
// empty; a restore that fails midway leaves the target as it was. `--force` replaces a target.
import { afterAll, describe, expect, test } from "bun:test";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import postgres from "postgres";
import { createBackup } from "../../modules/backup/service";
import { createOperator } from "../../modules/operators/service";
import { connectDatabase } from "../../modules/platform/database";
import { generateEd25519 } from "../../modules/platform/host-key";
import { newMac } from "../devices/helpers";
import { createTestDatabase } from "../helpers/database";
import { runOutpost } from "../helpers/process";
import { archiveEntries, emptyDatabase, writeArchive } from "./helpers";

const root = mkdtempSync(path.join(tmpdir(), "outpost-backup-refusals-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const sourceDir = path.join(root, "source");
const archive = path.join(root, "good.tar.gz");

const source = await createTestDatabase();
const [device] = await source.sql<{ id: string }[]>`
  insert into devices (mac_address, approval_status) values (${newMac()}, 'approved') returning id::text`;
await createOperator(source.db, {
  email: "keeper@refusals.test",
  password: "correct horse battery",
  role: "admin",
});
await Bun.$`mkdir -p ${sourceDir}`;
writeFileSync(path.join(sourceDir, "secret_key"), "k".repeat(43), { mode: 0o600 });
writeFileSync(path.join(sourceDir, "tunnel_host_key"), generateEd25519("refusals").private, { mode: 0o600 });
const manifest = await createBackup(source.sql, {
  output: archive,
  withoutTelemetry: false,
  dataDir: sourceDir,
  env: {},
  outpostVersion: "0.1.0",
});

let counter = 0;
/** A fresh, empty DATA_DIR path. */
const freshDir = () => path.join(root, `target-${++counter}`);

async function tablesIn(url: string): Promise<number> {
  const database = connectDatabase(url, 1);
  try {
    const [row] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from pg_class where relnamespace = 'public'::regnamespace and relkind in ('r', 'p')`;
    return row!.n;
  } finally {
    await database.close();
  }
}

/** Rewrites the good archive's entries (tampering), into a new file. */
function tampered(name: string, change: (entries: { name: string; bytes: Buffer }[]) => void): string {
  const entries = archiveEntries(archive);
  change(entries);
  const file = path.join(root, name);
  writeArchive(file, entries);
  return file;
}

function editManifest(entries: { name: string; bytes: Buffer }[], edit: (m: typeof manifest) => void) {
  const entry = entries.find((e) => e.name === "manifest.json")!;
  const parsed = JSON.parse(entry.bytes.toString("utf8"));
  edit(parsed);
  entry.bytes = Buffer.from(JSON.stringify(parsed));
}

describe("restore refuses what it cannot restore whole", () => {
  test("an entry whose bytes do not match the manifest's checksum: refused before the target is touched", async () => {
    const file = tampered("flipped.tar.gz", (entries) => {
      const part = entries.find((e) => /^db\/\d+-devices\./.test(e.name))!;
      part.bytes = Buffer.from(part.bytes.toString("utf8").replace("approved", "rejected"));
    });
    const target = await emptyDatabase();
    const dataDir = freshDir();
    const result = await runOutpost(["restore", file], { DATA_DIR: dataDir, DATABASE_URL: target.url });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^outpost: \S+flipped\.tar\.gz is corrupt: db\/\d+-devices\.000000\.copy does not match the manifest's size and checksum; nothing was restored\n$/,
    );
    expect(await tablesIn(target.url)).toBe(0);
    expect(existsSync(dataDir)).toBe(false);
  }, 60_000);

  test("a truncated archive and a file that is no archive at all", async () => {
    const cut = path.join(root, "cut.tar.gz");
    writeFileSync(cut, readFileSync(archive));
    truncateSync(cut, Math.floor(readFileSync(archive).length / 2));
    const target = await emptyDatabase();
    const truncated = await runOutpost(["restore", cut], { DATA_DIR: freshDir(), DATABASE_URL: target.url });
    expect(truncated.code).toBe(2);
    expect(truncated.stderr).toMatch(
      /^outpost: \S+cut\.tar\.gz is damaged or not an Outpost backup \(.+\); nothing was restored\n$/,
    );
    const text = path.join(root, "notes.txt");
    writeFileSync(text, "not a backup\n");
    const notArchive = await runOutpost(["restore", text], {
      DATA_DIR: freshDir(),
      DATABASE_URL: target.url,
    });
    expect(notArchive.code).toBe(2);
    expect(notArchive.stderr).toContain("is damaged or not an Outpost backup");
    expect(await tablesIn(target.url)).toBe(0);
  }, 60_000);

  test("an archive from a newer Outpost (a migration this build does not have)", async () => {
    const file = tampered("newer.tar.gz", (entries) =>
      editManifest(entries, (m) => {
        m.outpost_version = "9.0.0";
        m.migration = {
          count: m.migration.count + 1,
          last_at: m.migration.last_at + 1,
          last_tag: "9999_future",
        };
      }),
    );
    const target = await emptyDatabase();
    const result = await runOutpost(["restore", file], { DATA_DIR: freshDir(), DATABASE_URL: target.url });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^outpost: this archive comes from a newer Outpost \(9\.0\.0, migration \d+ 9999_future\); this is Outpost [\d.]+ at migration \d+ \S+: install Outpost 9\.0\.0 or later to restore it\n$/,
    );
    expect(await tablesIn(target.url)).toBe(0);
  }, 60_000);

  test("a target that is not empty: a database with Outpost's tables, a DATA_DIR with keys; --force replaces them", async () => {
    const used = await createTestDatabase();
    // The check of a target refuses while Outpost's own connections (application_name outpost) are
    // there, so the test reads it under another name.
    await used.close();
    const sql = postgres(used.url, { max: 1, connection: { application_name: "outpost-test" } });
    afterAll(() => sql.end());
    const [devicesBefore] = await sql<{ n: number }[]>`select count(*)::int as n from devices`;
    const refused = await runOutpost(["restore", archive], { DATA_DIR: freshDir(), DATABASE_URL: used.url });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /^outpost: the target database is not empty \(\d+ tables\): restore into an empty database, or pass --force to replace its contents\n$/,
    );
    const keyed = freshDir();
    await Bun.$`mkdir -p ${keyed}`;
    writeFileSync(path.join(keyed, "secret_key"), "x".repeat(43));
    const target = await emptyDatabase();
    const keysRefused = await runOutpost(["restore", archive], { DATA_DIR: keyed, DATABASE_URL: target.url });
    expect(keysRefused.code).toBe(2);
    expect(keysRefused.stderr).toBe(
      `outpost: DATA_DIR (${keyed}) already holds secret_key: restore into an empty DATA_DIR, or pass --force to replace them\n`,
    );
    expect(readFileSync(path.join(keyed, "secret_key"), "utf8")).toBe("x".repeat(43));
    expect(await tablesIn(target.url)).toBe(0);
    const [devicesAfter] = await sql<{ n: number }[]>`select count(*)::int as n from devices`;
    expect(devicesAfter!.n).toBe(devicesBefore!.n);

    const forced = await runOutpost(["restore", "--force", archive], {
      DATA_DIR: keyed,
      DATABASE_URL: used.url,
    });
    expect({ code: forced.code, stderr: forced.code === 0 ? "" : forced.stderr }).toEqual({
      code: 0,
      stderr: "",
    });
    const ids = await sql<{ id: string }[]>`select id::text from devices`;
    expect(ids.map((r) => r.id)).toEqual([device!.id]);
    expect(readFileSync(path.join(keyed, "secret_key"), "utf8")).toBe("k".repeat(43));
  }, 90_000);

  test("a restore that fails midway (rows the database refuses) leaves the target empty and DATA_DIR without keys", async () => {
    const file = tampered("bad-rows.tar.gz", (entries) => {
      const part = entries.find((e) => /^db\/\d+-devices\./.test(e.name))!;
      part.bytes = Buffer.from("not\ta\trow\n");
      // A manifest that agrees: the archive is intact, its rows are what PostgreSQL refuses.
      editManifest(entries, (m) => {
        const listed = m.files.find((f) => f.path === part.name)!;
        listed.bytes = part.bytes.length;
        listed.sha256 = new Bun.CryptoHasher("sha256").update(part.bytes).digest("hex");
      });
    });
    const target = await emptyDatabase();
    const dataDir = freshDir();
    const result = await runOutpost(["restore", file], { DATA_DIR: dataDir, DATABASE_URL: target.url });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^outpost: the restore failed and was rolled back, nothing was restored: .+\n$/,
    );
    expect(await tablesIn(target.url)).toBe(0);
    expect(["secret_key", "tunnel_host_key"].filter((k) => existsSync(path.join(dataDir, k)))).toEqual([]);
    expect(manifest.tables.find((t) => t.name === "devices")!.rows).toBe(1);
  }, 60_000);
});

describe("backup", () => {
  test("a backup that fails midway leaves no archive under its name, nor a partial file beside it", async () => {
    const output = path.join(root, "never.tar.gz");
    let tables = 0;
    const failing = createBackup(source.sql, {
      output,
      withoutTelemetry: false,
      dataDir: sourceDir,
      env: {},
      outpostVersion: "0.1.0",
      progress: () => {
        if (++tables === 5) throw new Error("disk full (test)");
      },
    });
    expect(failing).rejects.toThrow("disk full (test)");
    await failing.catch(() => {});
    expect(readdirSync(root).filter((name) => name.includes("never"))).toEqual([]);
  });

  test("DATA_DIR without its keys (and no SECRET_KEY / TUNNEL_HOST_KEY): one line, exit 2, no archive", async () => {
    const empty = freshDir();
    await Bun.$`mkdir -p ${empty}`;
    writeFileSync(path.join(empty, "secret_key"), "k".repeat(43), { mode: 0o600 });
    const output = path.join(root, "keyless.tar.gz");
    const result = await runOutpost(["backup", "--output", output], {
      DATA_DIR: empty,
      DATABASE_URL: source.url,
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `outpost: ${path.join(empty, "tunnel_host_key")} does not exist and TUNNEL_HOST_KEY is not set: run the backup with the DATA_DIR of the Outpost it backs up\n`,
    );
    expect(existsSync(output)).toBe(false);
  }, 60_000);
});
