import { schemaHash } from "../../modules/devices/validation";
import { sha256Hex } from "../../modules/platform/crypto";
import { hostKeyText } from "../../modules/terminal/service";
import { HOST_KEY, heartbeatBody, SCHEMA_DEFINITION, storedPayload } from "./body";
import type { BenchDevice } from "./load";

/** Generous: the fleet is visited in turn, and a small one would reach the real limit. */
export const UNLIMITED_RATE = { heartbeatRateLimit: 1_000_000, heartbeatRateWindowSeconds: 60 };

/**
 * Batches of heartbeats as the route hands them to the batcher, for benchmarks that run the batch
 * statement in-process: the fleet visited in turn, the agent's payload, its schema the device's own
 * (never stale) and its host key as the seed pinned it (the steady state).
 */
export function batchItems(devices: BenchDevice[], mac: string, size: number) {
  const hash = schemaHash({ ...SCHEMA_DEFINITION });
  const payload = storedPayload(heartbeatBody(mac, 1));
  const hostKey = hostKeyText(HOST_KEY)!;
  let sent = 0;
  return {
    /** Heartbeats handed out so far. */
    sent: () => sent,
    next: () =>
      Array.from({ length: size }, () => {
        const d = devices[sent++ % devices.length]!;
        const item = { deviceId: d.id, tokenHash: sha256Hex(d.token), schemaHash: hash, schemaJson: null };
        return { ...item, eventId: Bun.randomUUIDv7(), payloadJson: payload, hostKey };
      }),
  };
}
