// What the running daemon (`poll`) tells other invocations (`status`): its PID and its tunnel's state,
// in `daemon.json` in the state dir, rewritten atomically whenever the tunnel changes state. `status`
// runs in another process and cannot ask a tunnel client of its own: it reads this file instead.
import fs from "node:fs";
import path from "node:path";
import { writeFileAtomic } from "./fs-atomic.ts";
import type { ConnectionStatus } from "./tunnel.ts";

export interface DaemonState {
  pid: number;
  started_at: string;
  /** The kernel's boot id at start: a file left from before a reboot names a PID that may be reused. */
  boot_id: string | null;
  updated_at: string;
  tunnel: ConnectionStatus;
}

export type DaemonReport =
  | { running: true; pid: number; started_at: string; updated_at: string; tunnel: ConnectionStatus }
  | { running: false; reason: string }
  /** The file exists but cannot be read (e.g. `status` run by another user than the daemon's). */
  | { running: null; reason: string };

export function daemonStatePath(stateDir: string): string {
  return path.join(stateDir, "daemon.json");
}

function bootId(): string | null {
  try {
    return fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to another user (status run as a normal user).
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * The daemon's side: `publish(tunnel)` writes the file (never throws: a read-only state dir must not
 * stop polling); `clear()` removes it at exit, unless another daemon has taken it over since.
 */
export function daemonStatePublisher(stateDir: string) {
  const file = daemonStatePath(stateDir);
  const started = new Date().toISOString();
  const boot = bootId();
  return {
    publish(tunnel: ConnectionStatus) {
      const state: DaemonState = {
        pid: process.pid,
        started_at: started,
        boot_id: boot,
        updated_at: new Date().toISOString(),
        tunnel,
      };
      try {
        writeFileAtomic(file, `${JSON.stringify(state)}\n`, { mode: 0o600, dirMode: 0o700 });
      } catch {
        // Reported by `status` as an unknown state; polling goes on.
      }
    },
    clear() {
      try {
        const current = JSON.parse(fs.readFileSync(file, "utf8")) as Partial<DaemonState>;
        if (current.pid === process.pid) fs.rmSync(file, { force: true });
      } catch {
        // Nothing to clear.
      }
    },
  };
}

/** The `status` side: the daemon's state, or why no daemon is running (no file, or a dead PID's file). */
export function readDaemonState(stateDir: string): DaemonReport {
  const file = daemonStatePath(stateDir);
  let state: Partial<DaemonState>;
  try {
    state = JSON.parse(fs.readFileSync(file, "utf8")) as Partial<DaemonState>;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT")
      return { running: false, reason: "no daemon state" };
    return { running: null, reason: `cannot read ${file}: ${(err as Error).message}` };
  }
  if (typeof state.pid !== "number" || !state.tunnel || typeof state.started_at !== "string")
    return { running: false, reason: `${file} is incomplete` };
  const boot = bootId();
  if (!alive(state.pid) || (boot && state.boot_id && boot !== state.boot_id))
    return { running: false, reason: `stale state of PID ${state.pid}, which is not running` };
  return {
    running: true,
    pid: state.pid,
    started_at: state.started_at,
    updated_at: state.updated_at ?? state.started_at,
    tunnel: state.tunnel,
  };
}
