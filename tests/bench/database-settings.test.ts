import { expect, test } from "bun:test";
import { settingsFromEnv } from "../../bench/heartbeat/database";

test("BENCH_PG_SETTINGS names settings to try in a benchmark's own cluster", () => {
  expect(settingsFromEnv("")).toEqual({});
  expect(settingsFromEnv("wal_compression=pglz, wal_buffers = 64MB")).toEqual({
    wal_compression: "pglz",
    wal_buffers: "64MB",
  });
  // A value may hold '=' (split once); quoting is the caller's (ALTER SYSTEM … = '<value>').
  expect(settingsFromEnv("search_path=a=b")).toEqual({ search_path: "a=b" });
});

test("a malformed BENCH_PG_SETTINGS stops the benchmark with the pair it could not read", () => {
  expect(() => settingsFromEnv("wal_compression")).toThrow('not "wal_compression"');
  expect(() => settingsFromEnv("fsync off; select 1=1")).toThrow("BENCH_PG_SETTINGS");
  expect(() => settingsFromEnv("wal_buffers=")).toThrow("BENCH_PG_SETTINGS");
});
