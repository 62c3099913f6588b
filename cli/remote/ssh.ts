import { api, resolveDevice } from "./api";
import { CliError, type Credentials } from "./credentials";

/** ssh's own convention: 255 when the connection, not the remote command, failed. */
export const EXIT_CONNECTION = 255;

/** Input bytes per frame: their base64 fits the server's 64 KiB frame limit (modules/terminal/model.ts). */
const INPUT_FRAME_BYTES = 48 * 1024;

interface TerminalSession {
  session_id: string;
  session_ref: string;
  socket_token: string;
  topic: string;
}

type Frame = { event: string; topic?: string; payload?: Record<string, unknown> };

/** A refused join (docs/terminal.md's `{reason, code}`) in the operator's words. */
const JOIN_ERRORS: Record<string, string> = {
  ssh_authentication_failed: "the device's sshd refused the session key",
  ssh_authorization_failed: "the device's agent refused to authorize the session key",
  ssh_authorization_timeout:
    "the device did not authorize the session key within 15 s (is its agent running and polling?)",
  host_key_mismatch:
    "the device's SSH host key changed; an admin must accept the new key on the device's Terminal tab",
  device_not_connected:
    "the device's remote-access tunnel did not come up (is tunnel.server reachable from it?)",
  device_not_answering: "the device's tunnel did not answer (frozen device?)",
  tunnel_unreachable: "the server could not reach its tunnel process",
  session_expired: "the terminal session expired before it was joined",
};

export interface SshOptions {
  device: string;
  /** `-- <command>`: run it and exit with its status. */
  command?: string;
  stdin?: NodeJS.ReadStream;
  stdout?: NodeJS.WriteStream;
  stderr?: NodeJS.WriteStream;
}

/**
 * `outpost ssh`: opens a terminal session as the console's Open terminal does (same key handling,
 * lease, limits, recording, audit) and makes this terminal its screen: raw mode, the window's size and
 * its changes, the remote exit status as ours. Resolves to the exit code.
 */
export async function runSsh(credentials: Credentials, options: SshOptions): Promise<number> {
  const stdin = options.stdin ?? process.stdin;
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const device = await resolveDevice(credentials, options.device);
  if (!device.online)
    throw new CliError(`${device.name} is offline: remote access needs a device that is online`, 1);
  const { data: session } = await api<{ data: TerminalSession }>(
    credentials,
    "POST",
    `/api/v1/devices/${device.id}/terminal`,
  );
  const interactive = Boolean(stdin.isTTY);
  const size = () => ({ columns: stdout.columns || 80, rows: stdout.rows || 24 });
  const socketUrl = `${credentials.url.replace(/^http/, "ws")}/socket?token=${encodeURIComponent(session.socket_token)}`;
  // Bun's WebSocket takes headers: the token goes in Authorization, never in the URL or a log.
  const ws = new WebSocket(socketUrl, {
    headers: { authorization: `Bearer ${credentials.token}` },
  } as unknown as string[]);
  const send = (frame: Frame) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
  };
  let raw = false;
  const restore = () => {
    if (raw) stdin.setRawMode(false);
    raw = false;
    stdin.pause();
  };
  return await new Promise<number>((resolve) => {
    let settled = false;
    const finish = (code: number, message?: string) => {
      if (settled) return;
      settled = true;
      restore();
      stdout.off("resize", onResize);
      if (message) stderr.write(`${raw ? "\r\n" : ""}outpost: ${message}\n`);
      ws.close();
      resolve(code);
    };
    const onResize = () => send({ event: "resize", payload: size() });
    // Bytes as they are (a command fed a binary file gets every byte), in frames the server accepts.
    const onInput = (chunk: Buffer) => {
      for (let at = 0; at < chunk.length; at += INPUT_FRAME_BYTES)
        send({
          event: "input",
          payload: {
            data: chunk.subarray(at, at + INPUT_FRAME_BYTES).toString("base64"),
            encoding: "base64",
          },
        });
    };
    const startInput = () => {
      if (interactive) {
        stdin.setRawMode(true);
        raw = true;
      }
      stdin.on("data", onInput);
      // A command fed from a pipe or file reads its end of file when ours comes.
      stdin.on("end", () => send({ event: "eof" }));
      stdin.resume();
      stdout.on("resize", onResize);
    };
    ws.addEventListener("open", () => {
      if (interactive && !options.command) stderr.write(`Connecting to ${device.name}…\r\n`);
      send({
        event: "join",
        topic: session.topic,
        payload: {
          session_ref: session.session_ref,
          ...size(),
          ...(options.command === undefined ? {} : { command: options.command, pty: interactive }),
        },
      });
    });
    ws.addEventListener("message", (event) => {
      const frame = JSON.parse(String(event.data)) as Frame;
      const payload = frame.payload ?? {};
      switch (frame.event) {
        case "joined":
          startInput();
          break;
        case "output":
          (payload.stream === "stderr" ? stderr : stdout).write(String(payload.data ?? ""));
          break;
        case "join_error": {
          const code = String(payload.code ?? "");
          finish(
            EXIT_CONNECTION,
            JOIN_ERRORS[code] ?? `the terminal could not start (${code}: ${payload.message ?? ""})`,
          );
          break;
        }
        case "ended":
          if (payload.reason === "exit" && typeof payload.exit_status === "number")
            finish(payload.exit_status);
          else finish(EXIT_CONNECTION, `session ended: ${payload.label ?? payload.reason}`);
          break;
      }
    });
    ws.addEventListener("close", (event) => {
      finish(
        EXIT_CONNECTION,
        event.code === 1000 ? "session ended" : `connection to ${credentials.url} lost (${event.code})`,
      );
    });
    ws.addEventListener("error", () =>
      finish(EXIT_CONNECTION, `the terminal socket of ${credentials.url} refused the connection`),
    );
  });
}
