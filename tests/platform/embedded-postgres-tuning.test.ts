// A production (non-ephemeral) embedded cluster starts with Outpost's tuning, which ALTER SYSTEM overrides.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir, totalmem } from "node:os";
import path from "node:path";
import postgres from "postgres";
import { startEmbeddedPostgres, tuningSettings } from "../../modules/platform/embedded-postgres";

const parent = mkdtempSync(path.join(tmpdir(), "outpost-tuning-"));
afterAll(() => rmSync(parent, { recursive: true, force: true }));

test("tuning scales with memory within its bounds", () => {
  const gib = 1024 ** 3;
  expect(tuningSettings(1 * gib).shared_buffers).toBe("256MB");
  expect(tuningSettings(8 * gib).shared_buffers).toBe("2048MB");
  expect(tuningSettings(64 * gib).shared_buffers).toBe("4096MB");
  expect(tuningSettings(256 * 1024 ** 2).shared_buffers).toBe("128MB");
  expect(tuningSettings(8 * gib).max_wal_size).toBe("4GB");
});

test("a durable cluster runs with the tuning; ALTER SYSTEM wins over it after a restart", async () => {
  const directory = path.join(parent, "postgres");
  const show = async (url: string, name: string) => {
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const [row] = await sql.unsafe<{ value: string }[]>(`select current_setting('${name}') as value`);
      return row!.value;
    } finally {
      await sql.end();
    }
  };
  let cluster = await startEmbeddedPostgres({ directory });
  try {
    const expected = tuningSettings(totalmem());
    expect(await show(cluster.url, "max_wal_size")).toBe(expected.max_wal_size!);
    expect(await show(cluster.url, "checkpoint_timeout")).toBe(expected.checkpoint_timeout!);
    expect(await show(cluster.url, "random_page_cost")).toBe(expected.random_page_cost!);
    expect(await show(cluster.url, "autovacuum_naptime")).toBe("10s");
    const sql = postgres(cluster.url, { max: 1, onnotice: () => {} });
    await sql.unsafe("alter system set random_page_cost = 2.5");
    await sql.end();
    await cluster.stop();
    cluster = await startEmbeddedPostgres({ directory });
    expect(await show(cluster.url, "random_page_cost")).toBe("2.5");
  } finally {
    await cluster.stop();
    for (const suffix of [".password", ".log", ".owner"]) rmSync(`${directory}${suffix}`, { force: true });
  }
}, 60_000);
