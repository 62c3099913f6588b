// The browser terminal's sessions over the socket (tests/terminal/socket-fixture.ts): a shell through
// the tunnel, the idle and hard limits, closing, ending from outside, recording, retention.
import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { setOperatorDisabled } from "../../modules/operators/management";
import { pruneRecordings } from "../../modules/terminal/service";
import { openSocket, startTerminal, type TestDevice, waitFor } from "./helpers";
import { socketFixture } from "./socket-fixture";

const fixture = await socketFixture();
const { app, connected, directLogin, commandStatus } = fixture;
let device: TestDevice;
beforeAll(() => {
  device = fixture.device();
});

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
    expect(socket.frame("ended")!.payload).toMatchObject({
      reason: "exit",
      label: "Shell exited (status 3)",
    });
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
    // The audit log names who started, connected where, and how it ended.
    const audited = await app.database.sql<{ action: string; actor: string; details: { reason?: string } }[]>`
      select action, actor, details from audit_events where target = ${`terminal_session:${session.session_id}`}
      order by at`;
    expect(audited.map((e) => [e.action, e.actor, e.details.reason])).toEqual([
      ["terminal.start", operator.email, undefined], // the session's own target, from its start on
      ["terminal.connect", operator.email, undefined],
      ["terminal.end", operator.email, "exit"],
    ]);
  }, 90_000);

  test("the spec's join (topic `terminal:<device_id>` with the session ref, nothing else) opens the shell", async () => {
    const operator = await app.session("operator");
    const started = await startTerminal(app, device.id, operator);
    expect(started.status).toBe(201);
    const socket = openSocket(app, started.data.socket_token, operator.cookie);
    await socket.opened;
    socket.send({
      event: "join",
      topic: `terminal:${device.id}`,
      payload: { session_ref: started.data.session_ref },
    });
    await waitFor(() => socket.frame("joined") ?? socket.frame("join_error"), 40_000, "the join");
    expect(socket.frame("join_error")).toBeUndefined();
    const marker = `spec-${crypto.randomUUID().slice(0, 8)}`;
    socket.send({ event: "input", payload: { data: `echo ${marker}\r` } });
    await waitFor(() => new RegExp(`[\r\n]${marker}\r\n`).test(socket.output()), 10_000, "the echo");
    socket.send({ event: "leave" });
    await waitFor(() => socket.frame("ended"), 10_000, "the end");
  }, 60_000);

  test("idle: a warning, then the cut with the reference's messages", async () => {
    const { socket, session } = await connected(await app.session("operator"));
    // Idle 6 s, warned 3 s before: the limits run on the app's clock, moved on here.
    const started = performance.now();
    await app.clock.advance(3000);
    await waitFor(() => socket.frame("session_warning"), 10_000, "the idle warning");
    expect(String(socket.frame("session_warning")!.payload.message)).toMatch(
      /^Session idle\. Disconnecting in 3 seconds\. Press any key to stay connected\.$/,
    );
    expect(socket.frame("ended")).toBeUndefined();
    await app.clock.advance(3000);
    await waitFor(() => socket.frame("ended"), 10_000, "the idle cut");
    expect(performance.now() - started).toBeLessThan(6_000); // the clock's 6 s, not real ones
    expect(socket.output()).toContain("[Session idle. Disconnecting in 3s...]");
    expect(socket.output()).toContain("[Session timed out due to inactivity.]");
    expect(socket.frame("ended")!.payload).toMatchObject({ reason: "idle", label: "Idle timeout" });
    expect(await socket.closed).toBe(1000);
    const [row] = await app.database
      .sql`select end_reason from terminal_sessions where id = ${session.session_id}`;
    expect(row!.end_reason).toBe("idle");
  }, 60_000);

  test("hard limit: typing keeps it from idling, the time limit still ends it", async () => {
    const { socket } = await connected(await app.session("operator"));
    // A key a second of the app's clock (moved on here) for the 12 s limit, and a little beyond.
    const started = performance.now();
    for (let second = 0; second < 14 && !socket.frame("ended"); second++) {
      socket.send({ event: "input", payload: { data: " " } });
      await app.clock.advance(1000);
    }
    await waitFor(() => socket.frame("ended"), 10_000, "the time limit");
    expect(performance.now() - started).toBeLessThan(12_000); // the clock's 12 s, not real ones
    expect(socket.frame("session_warning")).toBeUndefined();
    expect(socket.output()).toContain("[Session time limit reached (12s). Disconnecting...]");
    expect(socket.frame("ended")!.payload).toMatchObject({
      reason: "max_duration",
      label: "Time limit reached",
    });
  }, 60_000);

  test("a shell killed by a signal has exited (status 128 + the signal), not lost its connection", async () => {
    const { socket, session } = await connected(await app.session("operator"));
    socket.send({ event: "input", payload: { data: "kill -9 $$\r" } });
    await waitFor(() => socket.frame("ended"), 10_000, "the end");
    expect(socket.frame("ended")!.payload).toMatchObject({
      reason: "exit",
      label: "Shell exited (status 137)",
    });
    const [row] = await app.database.sql<{ end_reason: string; exit_status: number }[]>`
      select end_reason, exit_status from terminal_sessions where id = ${session.session_id}`;
    expect(row).toEqual({ end_reason: "exit", exit_status: 137 });
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
    expect(first.socket.frame("ended")!.payload).toMatchObject({
      reason: "operator_disabled",
      label: "Operator disabled",
    });
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
    expect(second.socket.frame("ended")!.payload).toMatchObject({
      reason: "lease_ended",
      label: "Remote access ended",
    });
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
});
