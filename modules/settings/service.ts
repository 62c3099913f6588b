import type { Config } from "../platform/config";
import { storedDeviceSettings } from "./store";

export { setTerminalInputRecording, terminalInputRecording } from "./store";

/**
 * Settings the device API works with. Today their values come from environment variables (see
 * docs/device-api.md); an operator-editable settings table will later override them. Callers go
 * through `deviceSettings()` only, so moving a value into the database changes nothing else: the
 * getter is async and takes the config whose env values become the defaults.
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

const cache = new WeakMap<object, DeviceSettings>();

/** The current device settings (cheap: called on every heartbeat). */
export async function deviceSettings(config: SettingsSource): Promise<DeviceSettings> {
  let settings = cache.get(config);
  if (!settings) {
    settings = settingsDefaults(config);
    cache.set(config, settings);
  }
  // Operator-edited values (Settings page) override the env defaults; see ./store.ts.
  const stored = await storedDeviceSettings(config);
  return Object.keys(stored).length === 0 ? settings : { ...settings, ...stored };
}

export {
  DEFAULT_OFFLINE_ALERT_MINUTES,
  readConsoleSettings,
  rotateWebhookSecret,
  webhookSecret,
  webhookUrl,
} from "./store";
export { isPublicAddress, type Resolver } from "./webhook";
