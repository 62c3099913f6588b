import type { Clock } from "../../shared/clock";
import type { Config } from "../platform/config";
import type { Sql } from "../platform/database";
import {
  type MonitoringInput,
  recordOnlineWindowDefault,
  type SaveOutcome,
  saveMonitoringSettings,
  storedDeviceSettings,
} from "./store";

export { setTerminalInputRecording, terminalInputRecording } from "./store";

/**
 * Settings the device API works with: environment defaults (docs/device-api.md), overridden by what
 * operators save on the Settings page. Callers read them through `SettingsService.device()`.
 */
export interface DeviceSettings {
  /** A device is online when it was seen within this many seconds. */
  onlineWindowSeconds: number;
  /** Heartbeats accepted per device per window (fixed window). */
  heartbeatRateLimit: number;
  heartbeatRateWindowSeconds: number;
  /** Telemetry older than this many days is dropped (whole daily partitions). */
  telemetryRetentionDays: number;
  /** A command not delivered within this many seconds expires. */
  commandTtlSeconds: number;
}

export const HEARTBEAT_RATE_WINDOW_SECONDS = 60;

type SettingsSource = Pick<
  Config,
  "deviceOnlineWindowSeconds" | "deviceHeartbeatRateLimit" | "telemetryRetentionDays" | "commandTtlHours"
>;

export function settingsDefaults(config: SettingsSource): DeviceSettings {
  return {
    onlineWindowSeconds: config.deviceOnlineWindowSeconds,
    heartbeatRateLimit: config.deviceHeartbeatRateLimit,
    heartbeatRateWindowSeconds: HEARTBEAT_RATE_WINDOW_SECONDS,
    telemetryRetentionDays: config.telemetryRetentionDays,
    commandTtlSeconds: config.commandTtlHours * 3600,
  };
}

/** How long a process reuses the stored device settings: another process sees a save within this. */
export const SETTINGS_CACHE_MS = 5000;

/**
 * The device settings of one process (env defaults with the operators' saved values over them), read
 * on every heartbeat and so cached for SETTINGS_CACHE_MS. Built once by `createServices` and handed
 * around in the app context; a save through it is seen at once by this process.
 */
export class SettingsService {
  private readonly defaults: DeviceSettings;
  private cached: { at: number; value: DeviceSettings } | undefined;
  /** Bumped by every save: a read that began before it must not cache what it read. */
  private generation = 0;
  private recordedDefault: number | undefined;

  constructor(
    private readonly sql: Sql,
    config: SettingsSource,
    private readonly clock: Clock,
  ) {
    this.defaults = settingsDefaults(config);
  }

  /** The current device settings (cheap: called on every heartbeat). */
  async device(): Promise<DeviceSettings> {
    const hit = this.cached;
    if (hit && this.clock.now() - hit.at < SETTINGS_CACHE_MS) return hit.value;
    await this.recordDefault();
    const generation = this.generation;
    const stored = await storedDeviceSettings(this.sql);
    const value = Object.keys(stored).length === 0 ? this.defaults : { ...this.defaults, ...stored };
    if (generation === this.generation) this.cached = { at: this.clock.now(), value };
    return value;
  }

  /** Saves the monitoring settings (see store.ts); this process sees them at once. */
  async saveMonitoring(input: MonitoringInput, by?: string): Promise<SaveOutcome> {
    try {
      return await saveMonitoringSettings(this.sql, input, by);
    } finally {
      this.generation++;
      this.cached = undefined;
    }
  }

  /** The live trigger (migration 0008) reads the env default of the online window from the table. */
  private async recordDefault() {
    const seconds = this.defaults.onlineWindowSeconds;
    if (this.recordedDefault === seconds) return;
    // Best effort: a failed write must not fail a heartbeat; the next read tries again.
    await recordOnlineWindowDefault(this.sql, seconds).then(
      () => {
        this.recordedDefault = seconds;
      },
      () => {},
    );
  }
}

export {
  DEFAULT_OFFLINE_ALERT_MINUTES,
  readConsoleSettings,
  rotateWebhookSecret,
  webhookSecret,
  webhookUrl,
} from "./store";
export { isPublicAddress, type Resolver } from "./webhook";
