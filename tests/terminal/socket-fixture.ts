// The terminal end to end without a browser, shared by the socket test files: the app (all roles), a
// real agent, a real sshd, the real tunnel. A WebSocket client joins like the page does. Short limits
// (idle 6 s, hard 12 s) make the timers observable.
import { afterAll, beforeAll, expect } from "bun:test";
import ssh2 from "ssh2";
import { decryptPrivateKey } from "../../modules/terminal/keys";
import { startTestApp } from "../helpers/app";
import {
  LOGIN_USER,
  openSocket,
  startDevice,
  startTerminal,
  type TestDevice,
  waitFor,
  waitForFirstHeartbeat,
} from "./helpers";

export type Session = Awaited<ReturnType<typeof startTerminal>>["data"];
type Socket = ReturnType<typeof openSocket>;

/** Starts the app and, before the file's tests, a device whose agent has sent its first heartbeat. */
export async function socketFixture() {
  let device: TestDevice | undefined;
  // Hooks run in the order registered: the agent and its sshd stop before the app (the app's own hook,
  // registered by startTestApp), so no tunnel or terminal of theirs is open when it stops.
  afterAll(() => device?.stop());
  const app = await startTestApp({
    BASE_DOMAIN: "term.test",
    TERMINAL_IDLE_SECONDS: "6",
    TERMINAL_MAX_SECONDS: "12",
  });
  const theDevice = () => {
    if (!device) throw new Error("the socket fixture's device has not started");
    return device;
  };
  beforeAll(async () => {
    device = await startDevice(app);
    const id = device.id;
    await waitForFirstHeartbeat(app.database.sql, id);
  });

  function join(socket: Socket, session: Session, extra: Record<string, unknown> = {}) {
    socket.send({
      event: "join",
      topic: session.topic,
      payload: {
        session_ref: session.session_ref,
        command_id: session.command_id,
        columns: 100,
        rows: 30,
        ...extra,
      },
    });
  }

  /** A terminal started and joined: its socket, session and (decrypted) one-time private key. */
  async function connected(operator: { cookie: string; csrf: string }) {
    const started = await startTerminal(app, theDevice().id, operator);
    expect(started.status).toBe(201);
    const stored = await app.database.sql<{ private_key: Buffer }[]>`
      select private_key from terminal_sessions where id = ${started.data.session_id}`;
    const privateKey = decryptPrivateKey(app.config.secretKey, stored[0]!.private_key);
    const socket = openSocket(app, started.data.socket_token, operator.cookie);
    await socket.opened;
    join(socket, started.data);
    await waitFor(() => socket.frame("joined") ?? socket.frame("join_error"), 40_000, "the join");
    expect(socket.frame("join_error")).toBeUndefined();
    return { socket, session: started.data, privateKey };
  }

  /** Logs in to the device's sshd directly with a private key: "ok" or the refusal. */
  function directLogin(privateKey: string): Promise<string> {
    return new Promise((resolve) => {
      const client = new ssh2.Client();
      client.on("ready", () => {
        client.end();
        resolve("ok");
      });
      client.on("error", (error) => resolve(error.message));
      client.connect({
        host: "127.0.0.1",
        port: theDevice().sshdPort,
        username: LOGIN_USER,
        privateKey,
        readyTimeout: 8000,
      });
    });
  }

  /** The status of the newest command of `type` queued for the session. */
  async function commandStatus(type: string, sessionId: string) {
    const [row] = await app.database.sql<{ status: string }[]>`
      select status from pending_commands where device_id = ${theDevice().id} and type = ${type}
        and payload->>'name' = ${sessionId} order by queued_at desc limit 1`;
    return row?.status;
  }

  return { app, device: theDevice, join, connected, directLogin, commandStatus };
}
