// `outpost-agent status`: what this device's agent is and does, gathered from its config, state dir and
// the running daemon's state file (docs/agent.md). Never includes the token.

import fs from "node:fs";
import { secretFingerprint } from "../shared/secret-fingerprint.ts";
import { type DaemonReport, readDaemonState } from "./daemon-state.ts";
import { detectIdentity } from "./identity.ts";
import type { AgentContext } from "./poller.ts";
import { deviceSecretPath, loadCredentials, loadLastPoll } from "./state.ts";
import { AGENT_VERSION } from "./version.ts";

/**
 * The device secret's fingerprint, read without creating the secret: an operator compares it with the
 * identity claim on the device's page before accepting it (docs/device-api.md). Null: no secret yet.
 */
function deviceSecretFingerprint(stateDir: string): string | null {
  try {
    const stored = JSON.parse(fs.readFileSync(deviceSecretPath(stateDir), "utf8")) as { secret?: unknown };
    return typeof stored.secret === "string" ? secretFingerprint(stored.secret) : null;
  } catch {
    return null;
  }
}

export function agentStatus(ctx: Pick<AgentContext, "config" | "configSource" | "store">) {
  let creds = null;
  let credsProblem: string | null = null;
  try {
    creds = loadCredentials(ctx.config.state_dir);
  } catch (err) {
    credsProblem = (err as Error).message;
  }
  let identity: ReturnType<typeof detectIdentity> | { error: string };
  try {
    identity = detectIdentity(ctx.config.interface);
  } catch (err) {
    identity = { error: (err as Error).message };
  }
  const daemon = readDaemonState(ctx.config.state_dir);
  return {
    agent_version: AGENT_VERSION,
    config: ctx.configSource ?? "(defaults)",
    server_url: ctx.config.server_url,
    device_id: creds?.uuid ?? null,
    registered: creds !== null,
    credentials_problem: credsProblem,
    identity,
    secret_fingerprint: deviceSecretFingerprint(ctx.config.state_dir),
    last_poll: loadLastPoll(ctx.config.state_dir),
    scripts: ctx.store.latest().map((s) => ({ name: s.meta.name, version: s.meta.version })),
    // The daemon's tunnel, not one of this process's own: `status` is another process.
    daemon,
    tunnel: daemon.running ? daemon.tunnel : null,
  };
}

export type AgentStatus = ReturnType<typeof agentStatus>;

export function statusLines(status: AgentStatus): string[] {
  const { identity, credentials_problem: credsProblem, last_poll: lp } = status;
  return [
    `Agent:      outpost-agent ${status.agent_version}`,
    `Config:     ${status.config}`,
    `Server:     ${status.server_url}`,
    `Device:     ${status.device_id ? `registered as ${status.device_id}` : credsProblem ? `credentials unusable: ${credsProblem}` : "not registered"}`,
    "error" in identity
      ? `Identity:   ${identity.error}`
      : `Identity:   ${identity.name}  mac ${identity.mac_address}  ip ${identity.ip_address}  (${identity.interface})`,
    `Secret:     ${status.secret_fingerprint ? `fingerprint ${status.secret_fingerprint}` : "none yet (created at the first registration)"}`,
    `Last poll:  ${
      lp
        ? lp.ok
          ? `${lp.at} ok in ${lp.duration_ms} ms (${lp.scripts ?? 0} scripts, ${lp.script_errors ?? 0} failed, ${lp.commands ?? 0} commands)`
          : `${lp.at} FAILED: ${lp.error}`
        : "never"
    }`,
    `Scripts:    ${status.scripts.map((s) => `${s.name} v${s.version}`).join(", ") || "(none)"}`,
    ...daemonLines(status.daemon),
  ];
}

function daemonLines(daemon: DaemonReport): string[] {
  if (daemon.running === null) return [`Daemon:     unknown (${daemon.reason})`, "Tunnel:     unknown"];
  if (!daemon.running)
    return [`Daemon:     not running (${daemon.reason})`, "Tunnel:     unknown: no agent daemon is running"];
  const { tunnel } = daemon;
  const detail = [
    tunnel.since && tunnel.state === "connected" ? `since ${tunnel.since}` : "",
    tunnel.error ? `last error: ${tunnel.error}` : "",
  ]
    .filter(Boolean)
    .join(", ");
  return [
    `Daemon:     running, PID ${daemon.pid}, since ${daemon.started_at}`,
    `Tunnel:     ${tunnel.state}${detail ? ` (${detail})` : ""}`,
  ];
}
