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
