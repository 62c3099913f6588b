/**
 * A heartbeat's limits, one set for both ends: the server refuses a heartbeat that breaks them whole
 * (422 `telemetry_limits_exceeded`, 413 above the byte cap; modules/heartbeat), which would also stop
 * command delivery, so the agent checks before sending (agent/telemetry-limits.ts).
 */
export const TELEMETRY_LIMITS = {
  maxDepth: 10,
  maxKeys: 4096,
  maxKeysPerObject: 512,
  maxArrayItems: 1024,
  maxStringBytes: 16_384,
};

/** Largest heartbeat body the server reads (413 `payload_too_large` above). */
export const HEARTBEAT_MAX_BYTES = 256 * 1024;
