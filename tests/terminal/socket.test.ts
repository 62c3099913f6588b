// The terminal end to end without a browser: the app (all roles), a real agent, a real sshd, the real
// tunnel. A WebSocket client joins like the page does. Short limits (idle 6 s, hard 12 s) make the
// timers observable; the refusals use the same device.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import ssh2 from "ssh2";
import { setOperatorDisabled } from "../../modules/operators/management";
import { generateEd25519 } from "../../modules/platform/host-key";
import { signCredential } from "../../modules/remote-access/token";
import { decryptPrivateKey, parseHostKey } from "../../modules/terminal/keys";
import { pruneRecordings } from "../../modules/terminal/service";
import { heartbeatUrl, json, sampleHeartbeat } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { LOGIN_USER, openSocket, startDevice, startTerminal, type TestDevice, waitFor } from "./helpers";

const app = await startTestApp({
  BASE_DOMAIN: "term.test",
  TERMINAL_IDLE_SECONDS: "6",
  TERMINAL_MAX_SECONDS: "12",
});
let device: TestDevice;

beforeAll(async () => {
  device = await startDevice(app);
  await waitFor(
    async () =>
      (await app.database.sql`select 1 from devices where id = ${device.id} and last_seen_at is not null`)
        .length > 0,
    20_000,
    "the agent's first heartbeat",
  );
});
afterAll(() => device?.stop());

type Session = Awaited<ReturnType<typeof startTerminal>>["data"];

function join(socket: ReturnType<typeof openSocket>, session: Session, extra: Record<string, unknown> = {}) {
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

async function connected(operator: { cookie: string; csrf: string }) {
  const started = await startTerminal(app, device.id, operator);
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
      port: device.sshdPort,
      username: LOGIN_USER,
      privateKey,
      readyTimeout: 8000,
    });
  });
}

async function commandStatus(type: string, sessionId: string) {
  const [row] = await app.database.sql<{ status: string }[]>`
    select status from pending_commands where device_id = ${device.id} and type = ${type}
      and payload->>'name' = ${sessionId} order by queued_at desc limit 1`;
  return row?.status;
}

describe("browser terminal over the socket", () => {
  test("a shell through the tunnel: input, output, resize, exit status; the key is revoked afterwards", async () => {
    const operator = await app.session("operator");
    const { socket, session, privateKey } = await connected(operator);
    const marker = `outpost-${crypto.randomUUID().slice(0, 8)}`;
    socket.send({ event: "input", payload: { data: `echo ${marker}\r` } });
    const echoed = new RegExp(`[\r\n]${marker}\r\n`);
    await waitFor(() => echoed.test(socket.output()), 10_000, "the echo").catch((error) => {
      throw new Error(`${error.message}; the terminal showed ${JSON.stringify(socket.output())}`);
    });
    socket.send({ event: "resize", payload: { columns: 120, rows: "40" } });
    await Bun.sleep(200);
    socket.send({ event: "input", payload: { data: "stty size\r" } });
    await waitFor(() => socket.output().includes("40 120"), 10_000, "stty size after resize");
    // The device's sshd knows the key while the session runs…
    expect(await directLogin(privateKey)).toBe("ok");
    socket.send({ event: "input", payload: { data: "exit 3\r" } });
    await waitFor(() => socket.frame("ended"), 10_000, "the end");
    expect(socket.output()).toContain("[Session ended with status: 3]");
    expect(socket.frame("ended")!.payload.reason).toBe("exit");
    // …and refuses it once the agent ran the one ssh_revoke queued at the end.
    await waitFor(
      async () => (await commandStatus("ssh_revoke", session.session_id)) === "succeeded",
      20_000,
      "revoke",
    );
    expect(readFileSync(device.authorizedKeys, "utf8")).not.toContain(session.session_id);
    expect(await directLogin(privateKey)).not.toBe("ok");
    const [row] = await app.database.sql<
      { end_reason: string; exit_status: number; private_key: Buffer | null; lease_open: boolean }[]
    >`select end_reason, exit_status, private_key,
        exists (select 1 from remote_access_leases l where l.id = owned_lease_id and ended_at is null) as lease_open
      from terminal_sessions where id = ${session.session_id}`;
    expect(row).toEqual({ end_reason: "exit", exit_status: 3, private_key: null, lease_open: false });
    const revokes = await app.database.sql`select 1 from pending_commands
      where type = 'ssh_revoke' and payload->>'name' = ${session.session_id}`;
    expect(revokes.length).toBe(1);
    // The recording plays back the same output.
    const cast = await app.fetch(`/terminal/sessions/${session.session_id}/recording.cast`, {
      headers: { cookie: operator.cookie },
    });
    expect(cast.status).toBe(200);
    const lines = (await cast.text()).trim().split("\n");
    expect(JSON.parse(lines[0]!)).toMatchObject({ version: 2, width: 100, height: 30 });
    const events = lines.slice(1).map((l) => JSON.parse(l) as [number, string, string]);
    expect(
      events
        .filter((e) => e[1] === "o")
        .map((e) => e[2])
        .join(""),
    ).toMatch(echoed);
    expect(events.some((e) => e[1] === "r" && e[2] === "120x40")).toBe(true);
    expect(events.some((e) => e[1] === "i")).toBe(false); // input is not recorded by default
    // The audit log names who connected where, and how it ended.
    const audited = await app.database.sql<{ action: string; actor: string; details: { reason?: string } }[]>`
      select action, actor, details from audit_events where target = ${`terminal_session:${session.session_id}`}
      order by at`;
    expect(audited.map((e) => [e.action, e.actor, e.details.reason])).toEqual([
      ["terminal.connect", operator.email, undefined],
      ["terminal.end", operator.email, "exit"],
    ]);
  }, 90_000);

  test("idle: a warning, then the cut with the reference's messages", async () => {
    const { socket, session } = await connected(await app.session("operator"));
    await waitFor(() => socket.frame("session_warning"), 10_000, "the idle warning");
    expect(String(socket.frame("session_warning")!.payload.message)).toMatch(
      /^Session idle\. Disconnecting in 3 seconds\. Press any key to stay connected\.$/,
    );
    await waitFor(() => socket.frame("ended"), 10_000, "the idle cut");
    expect(socket.output()).toContain("[Session idle. Disconnecting in 3s...]");
    expect(socket.output()).toContain("[Session timed out due to inactivity.]");
    expect(socket.frame("ended")!.payload.reason).toBe("idle");
    expect(await socket.closed).toBe(1000);
    const [row] = await app.database
      .sql`select end_reason from terminal_sessions where id = ${session.session_id}`;
    expect(row!.end_reason).toBe("idle");
  }, 60_000);

  test("hard limit: typing keeps it from idling, the time limit still ends it", async () => {
    const { socket } = await connected(await app.session("operator"));
    const typing = setInterval(() => socket.send({ event: "input", payload: { data: " " } }), 1000);
    try {
      await waitFor(() => socket.frame("ended"), 20_000, "the time limit");
    } finally {
      clearInterval(typing);
    }
    expect(socket.frame("session_warning")).toBeUndefined();
    expect(socket.output()).toContain("[Session time limit reached (12s). Disconnecting...]");
    expect(socket.frame("ended")!.payload.reason).toBe("max_duration");
  }, 60_000);

  test("closing the socket ends the session and releases its lease", async () => {
    const { socket, session } = await connected(await app.session("operator"));
    socket.ws.close();
    const ended = await waitFor(
      async () => {
        const [row] = await app.database.sql<{ end_reason: string | null; lease_open: boolean }[]>`
        select end_reason, exists (select 1 from remote_access_leases l
          where l.id = owned_lease_id and ended_at is null) as lease_open
        from terminal_sessions where id = ${session.session_id}`;
        // The session row ends first, its lease right after (the revoke is queued in between).
        return row?.end_reason && !row.lease_open ? row : undefined;
      },
      10_000,
      "the end, and the lease released",
    );
    expect(ended).toEqual({ end_reason: "closed", lease_open: false });
  }, 60_000);

  test("an operator disabled mid-session and a lease ended by someone else both end the session", async () => {
    const operator = await app.session("operator");
    const first = await connected(operator);
    await setOperatorDisabled(app.database.db, operator.operatorId, true);
    await waitFor(() => first.socket.frame("ended"), 10_000, "the end after disabling");
    expect(first.socket.frame("ended")!.payload.reason).toBe("operator_disabled");
    expect(first.socket.output()).toContain("[Your account was disabled.]");
    await waitFor(
      async () => (await commandStatus("ssh_revoke", first.session.session_id)) !== undefined,
      5000,
      "revoke",
    );

    const second = await connected(await app.session("operator"));
    const [lease] = await app.database.sql<{ owned_lease_id: string }[]>`
      select owned_lease_id from terminal_sessions where id = ${second.session.session_id}`;
    const closed = await app.fetch(`/api/v1/devices/${device.id}/remote_access/${lease!.owned_lease_id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await app.token("operator")}` },
    });
    expect(closed.status).toBe(204);
    await waitFor(() => second.socket.frame("ended"), 10_000, "the end after the lease");
    expect(second.socket.frame("ended")!.payload.reason).toBe("lease_ended");
    expect(second.socket.output()).toContain("[Remote access to this device ended.]");
  }, 60_000);

  test("an admin may record keyboard input; the recording then holds it", async () => {
    const admin = await app.session("admin");
    const turnOn = await app.fetch("/terminal/settings", {
      method: "POST",
      headers: { cookie: admin.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: admin.csrf, record_input: "on" }).toString(),
    });
    expect(turnOn.status).toBe(303);
    const bad = await app.fetch("/terminal/settings", {
      method: "POST",
      headers: {
        cookie: admin.cookie,
        "content-type": "application/x-www-form-urlencoded",
        accept: "application/json",
      },
      body: new URLSearchParams({ _csrf: admin.csrf, record_input: "maybe" }).toString(),
    });
    expect(bad.status).toBe(400);
    await Bun.sleep(5100); // the settings cache of this process
    try {
      const operator = await app.session("operator");
      const { socket, session } = await connected(operator);
      socket.send({ event: "input", payload: { data: "echo typed-input\r" } });
      await waitFor(() => socket.output().includes("typed-input\r\n"), 10_000, "the echo");
      socket.send({ event: "leave" });
      await waitFor(() => socket.frame("ended"), 10_000, "the end");
      await waitFor(
        async () =>
          (
            await app.database
              .sql`select 1 from terminal_sessions where id = ${session.session_id} and ended_at is not null`
          ).length > 0,
        5000,
        "ended",
      );
      const cast = await (
        await app.fetch(`/terminal/sessions/${session.session_id}/recording.cast`, {
          headers: { cookie: operator.cookie },
        })
      ).text();
      const input = cast
        .trim()
        .split("\n")
        .slice(1)
        .map((l) => JSON.parse(l) as [number, string, string])
        .filter((e) => e[1] === "i")
        .map((e) => e[2])
        .join("");
      expect(input).toBe("echo typed-input\r");
    } finally {
      await app.fetch("/terminal/settings", {
        method: "POST",
        headers: { cookie: admin.cookie, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ _csrf: admin.csrf, record_input: "off" }).toString(),
      });
    }
  }, 60_000);

  test("an expired socket token is refused", async () => {
    const operator = await app.session("operator");
    const expired = signCredential(app.config.secretKey, "socket", {
      d: device.id,
      o: operator.operatorId,
      exp: Math.floor(Date.now() / 1000) - 1,
    });
    const response = await fetch(`${app.url}/socket?token=${encodeURIComponent(expired)}`, {
      redirect: "manual",
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        origin: app.url,
        cookie: operator.cookie,
      },
    });
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("invalid_socket_token");
  });

  test("retention deletes sessions and recordings ended longer ago than the window, not newer ones", async () => {
    const [old] = await app.database.sql<
      { id: string }[]
    >`select id from terminal_sessions where ended_at is not null limit 1`;
    await app.database
      .sql`update terminal_sessions set ended_at = now() - interval '91 days' where id = ${old!.id}`;
    const [young] = await app.database.sql<{ id: string }[]>`select id from terminal_sessions
      where ended_at is not null and id <> ${old!.id} limit 1`;
    await app.database
      .sql`update terminal_sessions set ended_at = now() - interval '89 days' where id = ${young!.id}`;
    expect(await pruneRecordings(app.database.sql, 90)).toBe(1);
    expect((await app.database.sql`select 1 from terminal_sessions where id = ${old!.id}`).length).toBe(0);
    expect(
      (await app.database.sql`select 1 from terminal_recording_chunks where session_id = ${old!.id}`).length,
    ).toBe(0);
    expect((await app.database.sql`select 1 from terminal_sessions where id = ${young!.id}`).length).toBe(1);
  });

  test("refused: forged or missing socket token, another site, a viewer", async () => {
    const operator = await app.session("operator");
    const started = await startTerminal(app, device.id, operator);
    const upgrade = (token: string, headers: Record<string, string>) =>
      fetch(`${app.url}/socket?token=${encodeURIComponent(token)}`, {
        redirect: "manual",
        headers: {
          connection: "Upgrade",
          upgrade: "websocket",
          "sec-websocket-version": "13",
          "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
          origin: app.url,
          ...headers,
        },
      });
    const forged = `${started.data.socket_token.slice(0, -4)}0000`;
    expect((await upgrade(forged, { cookie: operator.cookie })).status).toBe(401);
    expect((await upgrade("", { cookie: operator.cookie })).status).toBe(401);
    expect((await upgrade(started.data.socket_token, {})).status).toBe(401);
    expect(
      (await upgrade(started.data.socket_token, { cookie: operator.cookie, origin: "http://evil.test" }))
        .status,
    ).toBe(403);
    // Another operator's session with this operator's token.
    const other = await app.session("operator");
    expect((await upgrade(started.data.socket_token, { cookie: other.cookie })).status).toBe(401);
    const viewer = await app.session("viewer");
    expect((await upgrade(started.data.socket_token, { cookie: viewer.cookie })).status).toBe(403);
    expect((await startTerminal(app, device.id, viewer)).status).toBe(403);
    const good = await upgrade(started.data.socket_token, { cookie: operator.cookie });
    expect(good.status).toBe(101);
  }, 30_000);

  test("refused joins: unknown ref, another device's topic, missing or wrong command id", async () => {
    const operator = await app.session("operator");
    const started = await startTerminal(app, device.id, operator);
    const attempt = async (frame: Record<string, unknown>, payload: Record<string, unknown>) => {
      const socket = openSocket(app, started.data.socket_token, operator.cookie);
      await socket.opened;
      socket.send({ event: "join", topic: started.data.topic, ...frame, payload });
      const error = await waitFor(() => socket.frame("join_error"), 20_000, "a join error");
      socket.ws.close();
      return `${error.payload.reason}/${error.payload.code}`;
    };
    const ok = { session_ref: started.data.session_ref, command_id: started.data.command_id };
    expect(await attempt({}, { ...ok, session_ref: "nope" })).toBe("session_not_found/session_not_found");
    expect(await attempt({}, { ...ok, command_id: undefined })).toBe(
      "authorization_required/missing_command_id",
    );
    expect(await attempt({}, { ...ok, command_id: crypto.randomUUID() })).toBe(
      "authorization_invalid/session_mismatch",
    );
    const otherDevice = crypto.randomUUID();
    expect(await attempt({ topic: `terminal:${otherDevice}` }, ok)).toBe("unauthorized/device_mismatch");
    // A mismatch ends the session: its ref is no use any more.
    expect(await attempt({}, ok)).toBe("session_expired/session_expired");
  }, 60_000);

  test("another operator's session ref is refused", async () => {
    const owner = await app.session("operator");
    const started = await startTerminal(app, device.id, owner);
    const intruder = await app.session("operator");
    const theirs = await startTerminal(app, device.id, intruder);
    const socket = openSocket(app, theirs.data.socket_token, intruder.cookie);
    await socket.opened;
    join(socket, started.data);
    const error = await waitFor(() => socket.frame("join_error"), 20_000, "a join error");
    expect(`${error.payload.reason}/${error.payload.code}`).toBe("unauthorized/unauthorized");
    socket.ws.close();
  }, 30_000);

  test("host key pinning: a reported change refuses terminals until an admin accepts it; sshd showing another key is refused", async () => {
    const pinnedKey = async () =>
      (
        await app.database.sql<{ public_key: string; reported_key: string | null }[]>`
          select public_key, reported_key from device_host_keys where device_id = ${device.id}`
      )[0];
    const realKey = device.hostKeyPublic.split(" ").slice(0, 2).join(" ");
    expect(await pinnedKey()).toEqual({ public_key: realKey, reported_key: null });
    const otherKey = generateEd25519().public.trim().split(" ").slice(0, 2).join(" ");
    const admin = await app.session("admin");
    const accept = () =>
      app.fetch(`/devices/${device.id}/host-key/accept`, {
        method: "POST",
        headers: { cookie: admin.cookie, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ _csrf: admin.csrf }).toString(),
      });
    const joinError = async () => {
      const operator = await app.session("operator");
      const started = await startTerminal(app, device.id, operator);
      const socket = openSocket(app, started.data.socket_token, operator.cookie);
      await socket.opened;
      join(socket, started.data);
      const error = await waitFor(
        () => socket.frame("join_error") ?? socket.frame("joined"),
        40_000,
        "the join",
      );
      socket.ws.close();
      return error.event === "joined" ? "joined" : `${error.payload.reason}/${error.payload.code}`;
    };
    device.agent.kill("SIGSTOP");
    try {
      // The device (or whoever answers for it) reports another key.
      const beat = await app.fetch(
        heartbeatUrl(device.id, device.token),
        json({ ...sampleHeartbeat(), ssh_host_key: `${otherKey} root@elsewhere` }),
      );
      expect(beat.status).toBe(200);
      expect(await pinnedKey()).toEqual({ public_key: realKey, reported_key: otherKey });
      expect(await joinError()).toBe("host_key_changed/host_key_mismatch");
      const operatorAccept = await app.fetch(`/devices/${device.id}/host-key/accept`, {
        method: "POST",
        headers: { cookie: (await app.session("operator")).cookie },
      });
      expect(operatorAccept.status).toBe(403);
      expect((await accept()).status).toBe(303);
      expect(await pinnedKey()).toEqual({ public_key: otherKey, reported_key: null });
    } finally {
      device.agent.kill("SIGCONT");
    }
    // Now the pin is not what the real sshd shows: the agent's next heartbeat reports its real key…
    await waitFor(async () => (await pinnedKey())?.reported_key === realKey, 15_000, "the real key reported");
    expect(await joinError()).toBe("host_key_changed/host_key_mismatch");
    // …and even without a report, the SSH handshake itself refuses a key other than the pin.
    await app.database.sql`update device_host_keys set reported_key = null, reported_fingerprint = null
      where device_id = ${device.id}`;
    expect(await joinError()).toBe("host_key_changed/host_key_mismatch");
    await app.database.sql`update device_host_keys set reported_key = ${realKey},
      reported_fingerprint = ${parseHostKey(realKey)!.fingerprint} where device_id = ${device.id}`;
    expect((await accept()).status).toBe(303);
    expect(await joinError()).toBe("joined");
  }, 120_000);

  test("an offline device gets no terminal", async () => {
    await app.database
      .sql`update devices set last_seen_at = now() - interval '1 day' where id = ${device.id}`;
    device.agent.kill("SIGSTOP");
    try {
      const started = await startTerminal(app, device.id, await app.session("operator"));
      expect(started.status).toBe(409);
      expect(started.error!.code).toBe("device_offline");
    } finally {
      device.agent.kill("SIGCONT");
    }
  }, 30_000);
});
