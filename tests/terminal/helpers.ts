// (No bun:test import here: bench/terminal uses these too.)
// A device for terminal tests: a real OpenSSH sshd (its ed25519 host key, keys from the agent's
// authorized_keys file) and the real agent polling the app, with its tunnel to the app's tunnel role.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { saveCredentials } from "../../agent/state";
import type { Sql } from "../../modules/platform/database";
import { generateEd25519 } from "../../modules/platform/host-key";
import { tempDir } from "../agent/helpers";
import { approvedDevice } from "../devices/helpers";
import type { TestApp } from "../helpers/app";
import { startSshd } from "../helpers/listener";
import { spawnAgent } from "../helpers/process";

export const LOGIN_USER = process.env.USER ?? "root";

/**
 * A device's sshd as the agent's `ssh_authorize` meets it: a fresh host key in `dir` (`host_ed25519`,
 * its public half in `host_ed25519.pub` for the agent to report), keys only from `authorizedKeys`, and
 * only LOGIN_USER may log in.
 */
export async function startDeviceSshd(dir: string, name: string, authorizedKeys: string) {
  const hostKey = generateEd25519(`${name}-sshd`);
  writeFileSync(path.join(dir, "host_ed25519"), hostKey.private, { mode: 0o600 });
  writeFileSync(path.join(dir, "host_ed25519.pub"), `${hostKey.public.trim()}\n`);
  const sshd = await startSshd(dir, path.join(dir, "host_ed25519"), [
    `AuthorizedKeysFile ${authorizedKeys}`,
    "PubkeyAuthentication yes",
    "PermitRootLogin prohibit-password",
    "PrintMotd no",
    "PrintLastLog no",
    `AllowUsers ${LOGIN_USER}`,
    "AcceptEnv LANG LC_*",
  ]);
  return { sshd, hostKeyPublic: hostKey.public.trim() };
}

export interface TestDevice {
  id: string;
  token: string;
  dir: string;
  authorizedKeys: string;
  sshdPort: number;
  hostKeyPublic: string;
  agent: ReturnType<typeof Bun.spawn>;
  stop(): Promise<void>;
}

/** Where the agent goes when the server is not a TestApp (roles in separate processes). */
export interface DeviceTarget {
  url: string;
  tunnelSshPort: number;
  /** The agent's whole `tunnel.server` (several tunnel processes), instead of 127.0.0.1:tunnelSshPort. */
  tunnelServer?: string;
  device: { id: string; token: string };
}

/** An approved device with sshd and a polling agent (poll every `pollSeconds`, 3: with the wakes of terminals starting and ending, under the 30 heartbeats a minute a device may send). */
export async function startDevice(
  app: TestApp | DeviceTarget,
  options: { pollSeconds?: number; settings?: Record<string, string> } = {},
): Promise<TestDevice> {
  const tmp = tempDir("outpost-terminal-");
  const dir = tmp.dir;
  const authorizedKeys = path.join(dir, "ssh", "authorized_keys");
  const { sshd, hostKeyPublic } = await startDeviceSshd(dir, "device", authorizedKeys);
  const sshdPort = sshd.port;
  const target: DeviceTarget =
    "device" in app
      ? app
      : { url: app.url, tunnelSshPort: app.running.tunnel!.sshPort, device: await approvedDevice(app) };
  const device = target.device;
  saveCredentials(path.join(dir, "state"), { uuid: device.id, token: device.token });
  const { agent, stop: stopAgent } = spawnAgent({
    server_url: target.url,
    state_dir: path.join(dir, "state"),
    authorized_keys_path: authorizedKeys,
    ssh_target_user: LOGIN_USER,
    ssh_host_key_path: path.join(dir, "host_ed25519.pub"),
    install_builtin_scripts: "false",
    poll_interval_s: String(options.pollSeconds ?? 3),
    log_level: "warn",
    "tunnel.server": target.tunnelServer ?? `127.0.0.1:${target.tunnelSshPort}`,
    "tunnel.ssh_target": `127.0.0.1:${sshdPort}`,
    ...options.settings,
  });
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      await stopAgent();
      await sshd.stop();
      tmp.cleanup();
    })();
    return stopped;
  };
  // The device stops before the app it reaches, whoever stops first (the app's stop calls this).
  if ("stopsFirst" in app) app.stopsFirst(stop);
  return { id: device.id, token: device.token, dir, authorizedKeys, sshdPort, hostKeyPublic, agent, stop };
}

/** Waits (20 s at most) until the device's agent has sent its first heartbeat. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  timeoutMs: number,
  what: string,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < 2000 && Date.now() < deadline; i++) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    await Bun.sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Waits until the device's agent has sent its first heartbeat (the device has `last_seen_at`). */
export function waitForFirstHeartbeat(
  sql: Sql,
  deviceId: string,
  timeoutMs = 20_000,
  what = "the agent's first heartbeat",
) {
  return waitFor(
    async () =>
      (await sql`select 1 from devices where id = ${deviceId} and last_seen_at is not null`).length > 0,
    timeoutMs,
    what,
  );
}

/** A WebSocket client of /socket as a browser of this operator would open it (cookie, Origin). */
export function openSocket(app: Pick<TestApp, "url">, token: string, cookie: string, origin = app.url) {
  const url = `${app.url.replace(/^http/, "ws")}/socket?token=${encodeURIComponent(token)}`;
  const ws = new WebSocket(url, { headers: { cookie, origin } } as unknown as string[]);
  const frames: { event: string; payload: Record<string, unknown> }[] = [];
  ws.addEventListener("message", (event) => frames.push(JSON.parse(String(event.data))));
  const opened = new Promise<void>((resolve, reject) => {
    ws.addEventListener("open", () => resolve());
    ws.addEventListener("error", () => reject(new Error("socket refused")));
  });
  const closed = new Promise<number>((resolve) => ws.addEventListener("close", (e) => resolve(e.code)));
  return {
    ws,
    frames,
    opened,
    closed,
    send: (frame: unknown) => ws.send(JSON.stringify(frame)),
    /** Everything the terminal printed so far. */
    output: () =>
      frames
        .filter((f) => f.event === "output")
        .map((f) => f.payload.data)
        .join(""),
    frame: (event: string) => frames.find((f) => f.event === event),
  };
}

/** The socket of a started terminal, joined as the page joins it (the join checked). */
export async function joinedSocket(
  app: Pick<TestApp, "url">,
  session: Awaited<ReturnType<typeof startTerminal>>["data"],
  cookie: string,
) {
  const socket = openSocket(app, session.socket_token, cookie);
  await socket.opened;
  socket.send({
    event: "join",
    topic: session.topic,
    payload: { session_ref: session.session_ref, command_id: session.command_id },
  });
  await waitFor(() => socket.frame("joined") ?? socket.frame("join_error"), 40_000, "the join");
  if (socket.frame("join_error"))
    throw new Error(`join refused: ${JSON.stringify(socket.frame("join_error"))}`);
  return socket;
}

/** POST /devices/:id/terminal as the operator's page does. */
export async function startTerminal(
  app: Pick<TestApp, "fetch">,
  deviceId: string,
  session: { cookie: string; csrf: string },
) {
  const response = await app.fetch(`/devices/${deviceId}/terminal`, {
    method: "POST",
    headers: { cookie: session.cookie, "x-csrf-token": session.csrf, accept: "application/json" },
  });
  const body = (await response.json()) as {
    data: {
      session_id: string;
      session_ref: string;
      command_id: string;
      socket_token: string;
      topic: string;
    };
    error?: { code: string };
  };
  return { status: response.status, ...body };
}
