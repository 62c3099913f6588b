import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { writeFileAtomic } from "./fs-atomic.ts";

/** Credentials issued at registration. Stored as JSON with mode 0600. */
export interface DeviceCredentials {
  uuid: string;
  token: string;
}

/** Summary of the last poll, written by the daemon and shown by `status`. */
export interface LastPollStatus {
  at: string;
  ok: boolean;
  duration_ms: number;
  error?: string;
  scripts?: number;
  script_errors?: number;
  commands?: number;
  next_poll_in_ms?: number;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class StateError extends Error {
  override name = "StateError";
}

export function credentialsPath(stateDir: string): string {
  return path.join(stateDir, "identity.json");
}

export function lastPollPath(stateDir: string): string {
  return path.join(stateDir, "last-poll.json");
}

/** Store credentials atomically (tmp file + rename), file 0600, directory 0700. */
export function saveCredentials(stateDir: string, creds: DeviceCredentials): void {
  if (!UUID_RE.test(creds.uuid)) throw new StateError(`refusing to store invalid device id "${creds.uuid}"`);
  if (!creds.token) throw new StateError("refusing to store an empty token");
  const body = `${JSON.stringify({ uuid: creds.uuid.toLowerCase(), token: creds.token })}\n`;
  writeFileAtomic(credentialsPath(stateDir), body, { mode: 0o600, dirMode: 0o700 });
}

/** Load credentials; null when the agent has not registered yet. Throws on a corrupt file. */
export function loadCredentials(stateDir: string): DeviceCredentials | null {
  const file = credentialsPath(stateDir);
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw new StateError(`cannot read ${file}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new StateError(`${file} is corrupt (not JSON); re-run register`);
  }
  const { uuid, token } = (parsed ?? {}) as Partial<DeviceCredentials>;
  if (typeof uuid !== "string" || !UUID_RE.test(uuid) || typeof token !== "string" || token === "") {
    throw new StateError(`${file} is incomplete; re-run register after the device is approved`);
  }
  return { uuid: uuid.toLowerCase(), token };
}

export function saveLastPoll(stateDir: string, status: LastPollStatus): void {
  try {
    writeFileAtomic(lastPollPath(stateDir), `${JSON.stringify(status)}\n`, { mode: 0o600, dirMode: 0o700 });
  } catch {
    // Status reporting must never break polling.
  }
}

export function loadLastPoll(stateDir: string): LastPollStatus | null {
  try {
    return JSON.parse(fs.readFileSync(lastPollPath(stateDir), "utf8")) as LastPollStatus;
  } catch {
    return null;
  }
}

/**
 * The device's own secret, created once (32 random bytes) and sent with every registration: the
 * server binds it at the first registration and from then on gives a token only to a registration
 * that presents it, so knowing the MAC address is not enough to take the device's place. `bound`
 * records that a server accepted it (an agent upgraded from a version without secrets binds it once,
 * proving itself with the token it holds).
 */
export interface DeviceSecret {
  secret: string;
  bound: boolean;
}

export function deviceSecretPath(stateDir: string): string {
  return path.join(stateDir, "device-secret.json");
}

function writeDeviceSecret(stateDir: string, value: DeviceSecret) {
  writeFileAtomic(deviceSecretPath(stateDir), `${JSON.stringify(value)}\n`, { mode: 0o600, dirMode: 0o700 });
}

/** The stored secret, created (0600) on first use. Throws StateError on a corrupt file. */
export function loadOrCreateDeviceSecret(stateDir: string): DeviceSecret {
  const file = deviceSecretPath(stateDir);
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT")
      throw new StateError(`cannot read ${file}: ${(err as Error).message}`);
    const created = { secret: randomBytes(32).toString("base64url"), bound: false };
    writeDeviceSecret(stateDir, created);
    return created;
  }
  try {
    const parsed = JSON.parse(text) as DeviceSecret;
    if (typeof parsed.secret === "string" && parsed.secret.length >= 32)
      return { secret: parsed.secret, bound: parsed.bound === true };
  } catch {
    // reported below
  }
  throw new StateError(
    `${file} is corrupt: delete it only if an operator will accept the device's new identity`,
  );
}

export function markDeviceSecretBound(stateDir: string): void {
  const current = loadOrCreateDeviceSecret(stateDir);
  if (!current.bound) writeDeviceSecret(stateDir, { ...current, bound: true });
}

export function sentLabelsPath(stateDir: string): string {
  return path.join(stateDir, "labels-sent.json");
}

/** The labels the server last accepted in a registration (null when none was recorded). */
export function loadSentLabels(stateDir: string): Record<string, string> | null {
  try {
    const parsed = JSON.parse(fs.readFileSync(sentLabelsPath(stateDir), "utf8")) as unknown;
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, string>)
      : null;
  } catch {
    return null; // absent or unreadable: the next start sends the labels again
  }
}

export function saveSentLabels(stateDir: string, labels: Record<string, string>): void {
  writeFileAtomic(sentLabelsPath(stateDir), `${JSON.stringify(labels)}\n`, { mode: 0o600, dirMode: 0o700 });
}

/** Whether two label sets hold the same pairs (the order of keys does not matter). */
export function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => b[k] === a[k]);
}
