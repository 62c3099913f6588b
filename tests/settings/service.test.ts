// The settings service: a save is seen at once by the process that made it, by another process within
// SETTINGS_CACHE_MS (each process caches the device settings it reads on every heartbeat).
import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../modules/platform/config";
import { SETTINGS_CACHE_MS, SettingsService } from "../../modules/settings/service";
import { TestClock } from "../helpers/clock";
import { createTestDatabase } from "../helpers/database";

const database = await createTestDatabase();
const config = loadConfig({ SECRET_KEY: "k".repeat(32), DEVICE_ONLINE_WINDOW_SECONDS: "300" });
const monitoring = (minutes: number) => ({
  online_window_minutes: String(minutes),
  offline_alert_minutes: "10",
  telemetry_retention_days: "30",
});

describe("settings service", () => {
  test("a save is seen at once where it was made, elsewhere once the cache time has passed", async () => {
    const clock = new TestClock({ frozen: true });
    const here = new SettingsService(database.sql, config, clock);
    const elsewhere = new SettingsService(database.sql, config, clock); // another web process
    expect((await here.device()).onlineWindowSeconds).toBe(300);
    expect((await elsewhere.device()).onlineWindowSeconds).toBe(300);

    expect((await here.saveMonitoring(monitoring(2), "test")).errors).toBeUndefined();
    expect((await here.device()).onlineWindowSeconds).toBe(120);
    expect((await elsewhere.device()).onlineWindowSeconds).toBe(300); // its cache, for now
    await clock.advance(SETTINGS_CACHE_MS - 1);
    expect((await elsewhere.device()).onlineWindowSeconds).toBe(300);
    await clock.advance(1);
    expect((await elsewhere.device()).onlineWindowSeconds).toBe(120);
  });

  test("the env default of the online window is recorded for the live trigger, never as an override", async () => {
    const service = new SettingsService(
      database.sql,
      { ...config, deviceOnlineWindowSeconds: 90 },
      new TestClock(),
    );
    await service.device();
    const [row] = await database.sql<{ value: number }[]>`
      select value from system_settings where key = 'online_window_seconds_default'`;
    expect(row?.value).toBe(90);
  });
});
