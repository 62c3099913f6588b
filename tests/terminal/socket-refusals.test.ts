// What the terminal's socket refuses (tests/terminal/socket-fixture.ts): expired, forged or missing
// tokens, another site, a viewer, bad joins, another operator's session, a changed host key, an
// offline device.
import { beforeAll, describe, expect, test } from "bun:test";
import { generateEd25519 } from "../../modules/platform/host-key";
import { signCredential } from "../../modules/remote-access/token";
import { parseHostKey } from "../../modules/terminal/keys";
import { heartbeatUrl, json, sampleHeartbeat } from "../devices/helpers";
import { markSeen } from "../helpers/seen";
import { openSocket, startTerminal, type TestDevice, waitFor } from "./helpers";
import { socketFixture } from "./socket-fixture";

const fixture = await socketFixture();
const { app, join } = fixture;
let device: TestDevice;
beforeAll(() => {
  device = fixture.device();
});

/** A WebSocket upgrade of /socket as a browser on the app's origin sends it (`headers` add or override). */
function upgrade(token: string, headers: Record<string, string>) {
  return fetch(`${app.url}/socket?token=${encodeURIComponent(token)}`, {
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
}

describe("browser terminal over the socket: refusals", () => {
  test("an expired socket token is refused", async () => {
    const operator = await app.session("operator");
    const expired = signCredential(app.config.secretKey, "socket", {
      d: device.id,
      o: operator.operatorId,
      exp: Math.floor(Date.now() / 1000) - 1,
    });
    const response = await upgrade(expired, { cookie: operator.cookie });
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("invalid_socket_token");
  });

  test("refused: forged or missing socket token, another site, a viewer", async () => {
    const operator = await app.session("operator");
    const started = await startTerminal(app, device.id, operator);
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

  test("refused joins: unknown ref, another device's topic, a malformed or wrong command id", async () => {
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
    expect(await attempt({}, { ...ok, command_id: "not-a-uuid" })).toBe(
      "authorization_invalid/invalid_command_id",
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
    await markSeen(app.database.sql, device.id, 86_400);
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
