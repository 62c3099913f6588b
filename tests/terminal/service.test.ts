// Terminal sessions at the service, against a test database: who may start one, what is stored (the
// ref's hash, the key sealed), the `ssh_authorize` the device is sent, the join's refusals in the
// reference's {reason, code} pairs, the one-time key, ending (once: revoke queued, lease released),
// why a running session must stop, the sweep and the sessions list. The device's side of the join is
// the agent's own command executor answering the queued `ssh_authorize` (into a temporary
// authorized_keys). socket*.test.ts cover the same through the WebSocket with a real sshd.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { executeCommands } from "../../agent/commands/executor";
import { ScriptStore } from "../../agent/scripts/store";
import { recordCommandResults } from "../../modules/commands/results";
import { claimCommands, getCommand } from "../../modules/commands/service";
import { approveDevices, registerDevice } from "../../modules/devices/service";
import { createOperator } from "../../modules/operators/service";
import { AppError } from "../../modules/platform/errors";
import { generateEd25519 } from "../../modules/platform/host-key";
import { leaseIsActive } from "../../modules/remote-access/service";
import { signCredential } from "../../modules/remote-access/token";
import { noteHostKey } from "../../modules/terminal/host-keys";
import { decryptPrivateKey, hostKeyText, parseHostKey, refHash } from "../../modules/terminal/keys";
import { JoinError } from "../../modules/terminal/model";
import {
  AUTHORIZE_CONTENT_TYPE,
  AUTHORIZING_POLL_SECONDS,
  endSession,
  joinSession,
  keyLifetimeSeconds,
  markConnected,
  REVOKE_CONTENT_TYPE,
  SOCKET_TOKEN_SECONDS,
  startSession,
  stopReason,
  sweepSessions,
  terminalHeartbeatHint,
  verifySocketToken,
} from "../../modules/terminal/service";
import { getSession, listSessions, sessionSeconds } from "../../modules/terminal/sessions";
import { logger, testConfig } from "../agent/helpers";
import { createTestDatabase } from "../helpers/database";
import { markSeen } from "../helpers/seen";

const database = await createTestDatabase();
const { sql } = database;
const SECRET = "terminal-service-secret-0123456789abcdef";
const LIMITS = { idleSeconds: 600, maxSeconds: 1800 };
const FAST_POLL = { everyMs: 5, tries: 3 };

const agentDir = mkdtempSync(path.join(tmpdir(), "outpost-terminal-service-"));
afterAll(() => rmSync(agentDir, { recursive: true, force: true }));
const agentConfig = testConfig(agentDir);
const agent = { config: agentConfig, store: new ScriptStore(agentConfig.scripts_dir), logger };

let macs = 0;
/** An approved device, seen `secondsAgo` seconds ago (null: never). */
async function device(secondsAgo: number | null = 5, approve = true): Promise<string> {
  macs++;
  const mac = `02:7e:00:00:${String(Math.floor(macs / 100)).padStart(2, "0")}:${String(macs % 100).padStart(2, "0")}`;
  const { device } = await registerDevice(sql, { mac_address: mac }, { onlineWindowSeconds: 90 });
  if (approve) await approveDevices(sql, [device.id]);
  await markSeen(sql, device.id, secondsAgo);
  return device.id;
}

let operators = 0;
async function operator(): Promise<{ operatorId: string; email: string }> {
  operators++;
  const made = await createOperator(database.db, {
    email: `op${operators}@terminal.test`,
    password: "correct horse battery staple",
    role: "operator",
  });
  return { operatorId: made.id, email: made.email };
}

const start = (deviceId: string, who: { operatorId: string; email: string }) =>
  startSession(sql, {
    deviceId,
    operator: who,
    secretKey: SECRET,
    limits: LIMITS,
    remoteAccessMaxMinutes: 60,
    onlineWindowSeconds: 90,
  });

/** The device's next poll: the agent's executor runs what it claimed, its results are recorded. */
async function devicePolls(deviceId: string) {
  const delivered = await claimCommands(sql, deviceId);
  const results = await executeCommands(delivered as never, agent);
  await recordCommandResults(sql, deviceId, results);
  return results;
}

type Started = Awaited<ReturnType<typeof start>>;
const join = (
  started: Started,
  who: { operatorId: string },
  extra: Partial<Parameters<typeof joinSession>[1]> = {},
) =>
  joinSession(sql, {
    secretKey: SECRET,
    topicDeviceId: started.deviceId,
    socket: { deviceId: started.deviceId, operatorId: who.operatorId },
    operatorId: who.operatorId,
    sessionRef: started.sessionRef,
    commandId: started.commandId,
    poll: FAST_POLL,
    ...extra,
  });

/** A join's refusal as [reason, code], or "joined". */
async function joinOutcome(call: Promise<unknown>): Promise<[string, string] | "joined"> {
  try {
    await call;
    return "joined";
  } catch (error) {
    if (error instanceof JoinError) return [error.reason, error.code];
    throw error;
  }
}

async function sessionRow(id: string) {
  const [row] = await sql<
    {
      ref_hash: string;
      private_key: Buffer | null;
      ended_at: Date | null;
      end_reason: string | null;
      exit_status: number | null;
      owned_lease_id: string | null;
      expires_at: Date;
      created_at: Date;
      connected_at: Date | null;
    }[]
  >`select ref_hash, private_key, ended_at, end_reason, exit_status, owned_lease_id, expires_at, created_at,
      connected_at from terminal_sessions where id = ${id}::uuid`;
  return row!;
}

async function queued(deviceId: string, type: string) {
  return sql<{ id: string; payload: { content_type: string; name: string; data: string } }[]>`
    select id, payload from pending_commands where device_id = ${deviceId}::uuid and type = ${type}
    order by queued_at`;
}

describe("starting a session", () => {
  test("keyLifetimeSeconds: the hard limit plus a minute to connect, never over an hour", () => {
    expect(keyLifetimeSeconds({ idleSeconds: 60, maxSeconds: 600 })).toBe(660);
    expect(keyLifetimeSeconds({ idleSeconds: 60, maxSeconds: 3540 })).toBe(3600);
    expect(keyLifetimeSeconds({ idleSeconds: 60, maxSeconds: 7200 })).toBe(3600);
  });

  test("on an unknown, non-UUID, pending or offline device: refused, nothing stored", async () => {
    const who = await operator();
    const refusal = async (deviceId: string) => {
      try {
        await start(deviceId, who);
      } catch (error) {
        if (error instanceof AppError) return [error.status, error.code];
        throw error;
      }
      return "started";
    };
    expect(await refusal("not-a-uuid")).toEqual([404, "device_not_found"]);
    expect(await refusal(crypto.randomUUID())).toEqual([404, "device_not_found"]);
    expect(await refusal(await device(5, false))).toEqual([404, "device_not_found"]);
    expect(await refusal(await device(null))).toEqual([409, "device_offline"]);
    expect(await refusal(await device(3600))).toEqual([409, "device_offline"]);
    const [count] = await sql<{ n: number }[]>`select count(*)::int as n from terminal_sessions
      where operator_id = ${who.operatorId}::uuid`;
    expect(count!.n).toBe(0);
  });

  test("stores the ref's hash and the key sealed, opens a lease, queues ssh_authorize with the public key", async () => {
    const who = await operator();
    const id = await device();
    const started = await start(id, who);
    const row = await sessionRow(started.sessionId);
    expect(row.ref_hash).toBe(refHash(started.sessionRef));
    expect(row.ref_hash).not.toContain(started.sessionRef);
    const privateKey = decryptPrivateKey(SECRET, row.private_key!);
    expect(() => decryptPrivateKey("another-secret-0123456789abcdef012345", row.private_key!)).toThrow();
    const lifetime = keyLifetimeSeconds(LIMITS);
    const expiresIn = (new Date(row.expires_at).getTime() - new Date(row.created_at).getTime()) / 1000;
    expect(Math.abs(expiresIn - lifetime)).toBeLessThan(2);
    expect(await leaseIsActive(sql, id, row.owned_lease_id!)).toBe(true);

    const command = await getCommand(sql, started.commandId);
    expect(command?.type).toBe("ssh_authorize");
    const [authorize] = await queued(id, "ssh_authorize");
    expect(authorize!.payload.content_type).toBe(AUTHORIZE_CONTENT_TYPE);
    // The device sees the session id, never the ref.
    expect(authorize!.payload.name).toBe(started.sessionId);
    expect(JSON.parse(authorize!.payload.data)).toEqual({
      ttl_seconds: lifetime,
      session_ref: started.sessionId,
    });
    const [stored] = await sql<{ public_key: string }[]>`select public_key from pending_commands
      where id = ${started.commandId}::uuid`;
    expect(stored!.public_key).toMatch(/^ssh-ed25519 \S+ outpost-terminal$/);
    // The sealed private key is the pair of the public key sent.
    const sshKey = (await import("ssh2")).default.utils.parseKey(privateKey);
    const parsed = Array.isArray(sshKey) ? sshKey[0]! : sshKey;
    if (parsed instanceof Error) throw parsed;
    expect(parsed.getPublicSSH().toString("base64")).toBe(stored!.public_key.split(" ")[1]!);
  });

  test("the socket token names the device and the operator, for an hour, under this secret only", async () => {
    const who = await operator();
    const started = await start(await device(), who);
    expect(verifySocketToken(SECRET, started.socketToken)).toEqual({
      deviceId: started.deviceId,
      operatorId: who.operatorId,
    });
    expect(verifySocketToken("another-secret-0123456789abcdef012345", started.socketToken)).toBeUndefined();
    expect(verifySocketToken(SECRET, undefined)).toBeUndefined();
    expect(verifySocketToken(SECRET, `${started.socketToken}x`)).toBeUndefined();
    const now = Math.floor(Date.now() / 1000);
    const noOperator = signCredential(SECRET, "socket", { d: started.deviceId, exp: now + 60 });
    expect(verifySocketToken(SECRET, noOperator)).toBeUndefined();
    const otherKind = signCredential(SECRET, "cookie", {
      d: started.deviceId,
      o: who.operatorId,
      exp: now + 60,
    });
    expect(verifySocketToken(SECRET, otherKind)).toBeUndefined();
    const expired = signCredential(SECRET, "socket", {
      d: started.deviceId,
      o: who.operatorId,
      exp: now - 1,
    });
    expect(verifySocketToken(SECRET, expired)).toBeUndefined();
    const [payload] = started.socketToken.split(".");
    const exp = JSON.parse(Buffer.from(payload!, "base64url").toString()).exp as number;
    expect(Math.abs(exp - (now + SOCKET_TOKEN_SECONDS))).toBeLessThan(3);
  });

  test("a new session ends the same operator's earlier one on the device (replaced), not another operator's", async () => {
    const [me, other] = [await operator(), await operator()];
    const id = await device();
    const first = await start(id, me);
    const theirs = await start(id, other);
    await start(id, me);
    expect((await sessionRow(first.sessionId)).end_reason).toBe("replaced");
    expect((await sessionRow(theirs.sessionId)).ended_at).toBeNull();
  });
});

describe("joining", () => {
  test("with the agent's answer: the key leaves the database once, the user is the one the device authorized", async () => {
    const who = await operator();
    const started = await start(await device(), who);
    const [result] = await devicePolls(started.deviceId);
    expect(result!.status).toBe("OK");
    // The public key is in the agent's authorized_keys, tagged with the session id.
    expect(readFileSync(agentConfig.authorized_keys_path, "utf8")).toContain(started.sessionId);
    const joined = await join(started, who);
    expect(joined.sessionId).toBe(started.sessionId);
    expect(joined.username).toBe(agentConfig.ssh_target_user);
    expect(joined.privateKey).toContain("PRIVATE KEY");
    expect(joined.hostKey).toEqual({ state: "unpinned" });
    expect((await sessionRow(started.sessionId)).private_key).toBeNull();
    expect(await joinOutcome(join(started, who))).toEqual(["session_expired", "session_expired"]);
  });

  test("a ref that is not a string, empty, too long or unknown: session_not_found", async () => {
    const who = await operator();
    const started = await start(await device(), who);
    for (const sessionRef of [undefined, 42, "", "x".repeat(201), `${started.sessionRef}x`])
      expect(await joinOutcome(join(started, who, { sessionRef }))).toEqual([
        "session_not_found",
        "session_not_found",
      ]);
  });

  test("another device's topic or socket: device_mismatch, and the session ends failed", async () => {
    const who = await operator();
    const other = await device();
    for (const wrong of ["topic", "socket"] as const) {
      const started = await start(await device(), who);
      await devicePolls(started.deviceId);
      const override =
        wrong === "topic"
          ? { topicDeviceId: other, socket: { deviceId: other, operatorId: who.operatorId } }
          : { socket: { deviceId: other, operatorId: who.operatorId } };
      expect(await joinOutcome(join(started, who, override))).toEqual(["unauthorized", "device_mismatch"]);
      expect((await sessionRow(started.sessionId)).end_reason).toBe("failed");
    }
  });

  test("another operator, or a socket of another operator: unauthorized, the session stays joinable", async () => {
    const [me, other] = [await operator(), await operator()];
    const started = await start(await device(), me);
    await devicePolls(started.deviceId);
    expect(
      await joinOutcome(
        join(started, other, { socket: { deviceId: started.deviceId, operatorId: other.operatorId } }),
      ),
    ).toEqual(["unauthorized", "unauthorized"]);
    expect(
      await joinOutcome(
        join(started, me, { socket: { deviceId: started.deviceId, operatorId: other.operatorId } }),
      ),
    ).toEqual(["unauthorized", "unauthorized"]);
    expect((await sessionRow(started.sessionId)).ended_at).toBeNull();
    expect(await joinOutcome(join(started, me))).toBe("joined");
  });

  test("command_id: absent or empty is fine; not a UUID or another command's is refused", async () => {
    const who = await operator();
    const started = await start(await device(), who);
    await devicePolls(started.deviceId);
    expect(await joinOutcome(join(started, who, { commandId: "nope" }))).toEqual([
      "authorization_invalid",
      "invalid_command_id",
    ]);
    expect(await joinOutcome(join(started, who, { commandId: 7 }))).toEqual([
      "authorization_invalid",
      "invalid_command_id",
    ]);
    expect(await joinOutcome(join(started, who, { commandId: crypto.randomUUID() }))).toEqual([
      "authorization_invalid",
      "session_mismatch",
    ]);
    expect(await joinOutcome(join(started, who, { commandId: "" }))).toBe("joined");
    const second = await start(await device(), who);
    await devicePolls(second.deviceId);
    expect(await joinOutcome(join(second, who, { commandId: undefined }))).toBe("joined");
  });

  test("an ended or expired session: session_expired", async () => {
    const who = await operator();
    const ended = await start(await device(), who);
    await devicePolls(ended.deviceId);
    await endSession(sql, ended.sessionId, "closed");
    expect(await joinOutcome(join(ended, who))).toEqual(["session_expired", "session_expired"]);
    const expired = await start(await device(), who);
    await devicePolls(expired.deviceId);
    await sql`update terminal_sessions set expires_at = now() - interval '1 second' where id = ${expired.sessionId}::uuid`;
    expect(await joinOutcome(join(expired, who))).toEqual(["session_expired", "session_expired"]);
    // Still in the future by a little: joinable.
    const soon = await start(await device(), who);
    await devicePolls(soon.deviceId);
    await sql`update terminal_sessions set expires_at = now() + interval '5 seconds' where id = ${soon.sessionId}::uuid`;
    expect(await joinOutcome(join(soon, who))).toBe("joined");
  });

  test("the device reported a host key other than the pinned one: host_key_mismatch, ended", async () => {
    const who = await operator();
    const id = await device();
    await noteHostKey(sql, id, generateEd25519("first").public);
    await noteHostKey(sql, id, generateEd25519("second").public);
    const started = await start(id, who);
    await devicePolls(id);
    expect(await joinOutcome(join(started, who))).toEqual(["host_key_changed", "host_key_mismatch"]);
    expect((await sessionRow(started.sessionId)).end_reason).toBe("failed");
  });

  test("a pinned key travels with the join", async () => {
    const who = await operator();
    const id = await device();
    const key = generateEd25519("pinned").public;
    await noteHostKey(sql, id, key);
    const started = await start(id, who);
    await devicePolls(id);
    const joined = await join(started, who);
    expect(joined.hostKey.state).toBe("pinned");
    expect(joined.hostKey.state === "pinned" && joined.hostKey.publicKey).toBe(hostKeyText(key)!);
  });

  test("the device refused the key: ssh_authorization_failed with its error, ended", async () => {
    const who = await operator();
    const started = await start(await device(), who);
    // A device whose authorized_keys cannot be written (its directory is a file): the agent fails the command.
    const blocked = path.join(agentDir, "not-a-directory");
    writeFileSync(blocked, "");
    const broken = { ...agent, config: { ...agentConfig, authorized_keys_path: path.join(blocked, "keys") } };
    const results = await executeCommands((await claimCommands(sql, started.deviceId)) as never, broken);
    expect(results[0]!.status).toBe("FAILED");
    await recordCommandResults(sql, started.deviceId, results);
    const refused = join(started, who);
    expect(await joinOutcome(refused)).toEqual(["authorization_failed", "ssh_authorization_failed"]);
    expect(await refused.catch((error: Error) => error.message)).toBe(results[0]!.error!);
    expect((await sessionRow(started.sessionId)).end_reason).toBe("failed");
  });

  test("the device never answered: ssh_authorization_timeout after the polls, ended; onWaiting told once", async () => {
    const who = await operator();
    const started = await start(await device(), who);
    let waiting = 0;
    const began = Date.now();
    expect(
      await joinOutcome(join(started, who, { poll: { everyMs: 20, tries: 4 }, onWaiting: () => waiting++ })),
    ).toEqual(["authorization_timeout", "ssh_authorization_timeout"]);
    expect(Date.now() - began).toBeGreaterThanOrEqual(70);
    expect(waiting).toBe(1);
    expect((await sessionRow(started.sessionId)).end_reason).toBe("failed");
  });

  test("the device answered late (between polls): joined", async () => {
    const who = await operator();
    const started = await start(await device(), who);
    let waits = 0;
    const joined = join(started, who, {
      poll: { everyMs: 30, tries: 20 },
      onWaiting: () => {
        waits++;
        void devicePolls(started.deviceId);
      },
    });
    expect(await joinOutcome(joined)).toBe("joined");
    expect(waits).toBe(1);
  });

  test("the authorization names another session: session_mismatch", async () => {
    const who = await operator();
    const started = await start(await device(), who);
    // What a device answers when the command it ran named another session.
    const delivered = (await claimCommands(sql, started.deviceId)).map((c) => {
      const payload = c.payload as { data: string };
      return {
        ...c,
        payload: {
          ...payload,
          data: JSON.stringify({ ...JSON.parse(payload.data), session_ref: "another" }),
        },
      };
    });
    const results = await executeCommands(delivered as never, agent);
    expect(results[0]!.status).toBe("OK");
    await recordCommandResults(sql, started.deviceId, results);
    expect(await joinOutcome(join(started, who))).toEqual(["authorization_invalid", "session_mismatch"]);
  });

  test("the session's command is gone or expired", async () => {
    const who = await operator();
    const gone = await start(await device(), who);
    await sql`update terminal_sessions set command_id = null where id = ${gone.sessionId}::uuid`;
    expect(await joinOutcome(join(gone, who, { commandId: undefined }))).toEqual([
      "authorization_invalid",
      "command_not_found",
    ]);
    const expired = await start(await device(), who);
    await sql`update pending_commands set status = 'expired' where id = ${expired.commandId}::uuid`;
    expect(await joinOutcome(join(expired, who))).toEqual([
      "authorization_failed",
      "ssh_authorization_failed",
    ]);
  });
});

describe("ending", () => {
  test("once: records why and the exit status, drops the key, queues one ssh_revoke, releases the lease", async () => {
    const who = await operator();
    const started = await start(await device(), who);
    const leaseId = (await sessionRow(started.sessionId)).owned_lease_id!;
    expect(await endSession(sql, started.sessionId, "exit", 3)).toBe(true);
    const row = await sessionRow(started.sessionId);
    expect([row.end_reason, row.exit_status, row.private_key]).toEqual(["exit", 3, null]);
    expect(row.ended_at).not.toBeNull();
    const revokes = await queued(started.deviceId, "ssh_revoke");
    expect(revokes.map((r) => r.payload)).toEqual([
      {
        content_type: REVOKE_CONTENT_TYPE,
        name: started.sessionId,
        data: JSON.stringify({ session_ref: started.sessionId }),
      },
    ]);
    expect(await leaseIsActive(sql, started.deviceId, leaseId)).toBe(false);
    expect(await endSession(sql, started.sessionId, "closed")).toBe(false);
    expect((await sessionRow(started.sessionId)).end_reason).toBe("exit");
    expect(await queued(started.deviceId, "ssh_revoke")).toHaveLength(1);
    expect(await endSession(sql, "not-a-uuid", "closed")).toBe(false);
  });

  test("the agent removes the key when the revoke reaches it", async () => {
    const who = await operator();
    const started = await start(await device(), who);
    await devicePolls(started.deviceId);
    expect(readFileSync(agentConfig.authorized_keys_path, "utf8")).toContain(started.sessionId);
    await endSession(sql, started.sessionId, "closed");
    const [revoke] = await devicePolls(started.deviceId);
    expect(revoke!.output).toMatchObject({ revoked: 1 });
    expect(readFileSync(agentConfig.authorized_keys_path, "utf8")).not.toContain(started.sessionId);
  });

  test("stopReason: running, its lease ended, its operator disabled, already ended", async () => {
    const who = await operator();
    const started = await start(await device(), who);
    const active = async () => true;
    expect(await stopReason(sql, started.sessionId, active)).toBeUndefined();
    expect(await stopReason(sql, started.sessionId, async (id) => id !== who.operatorId)).toBe(
      "operator_disabled",
    );
    const leaseId = (await sessionRow(started.sessionId)).owned_lease_id!;
    await sql`update remote_access_leases set ended_at = now() where id = ${leaseId}::uuid`;
    expect(await stopReason(sql, started.sessionId, active)).toBe("lease_ended");
    await endSession(sql, started.sessionId, "closed");
    expect(await stopReason(sql, started.sessionId, active)).toBe("already_ended");
    expect(await stopReason(sql, crypto.randomUUID(), active)).toBe("already_ended");
  });

  test("the sweep ends sessions past their expiry (expired), and only those", async () => {
    const who = await operator();
    const stale = await start(await device(), who);
    const fresh = await start(await device(), who);
    await sql`update terminal_sessions set expires_at = now() - interval '1 second' where id = ${stale.sessionId}::uuid`;
    expect(await sweepSessions(sql)).toBeGreaterThanOrEqual(1);
    expect((await sessionRow(stale.sessionId)).end_reason).toBe("expired");
    expect((await sessionRow(fresh.sessionId)).ended_at).toBeNull();
    expect(await sweepSessions(sql)).toBe(0);
  });
});

describe("the heartbeat's hint", () => {
  test("a faster poll while a session waits for its key, not once it connected, ended or expired", async () => {
    const who = await operator();
    const id = await device();
    const access = { pollIntervalSeconds: 30, other: "kept" };
    expect(await terminalHeartbeatHint(sql, id, access)).toEqual(access);
    const started = await start(id, who);
    expect(await terminalHeartbeatHint(sql, id, access)).toEqual({
      pollIntervalSeconds: AUTHORIZING_POLL_SECONDS,
      other: "kept",
    });
    expect(await terminalHeartbeatHint(sql, id, { pollIntervalSeconds: 1 })).toEqual({
      pollIntervalSeconds: 1,
    });
    await markConnected(sql, started.sessionId);
    expect((await sessionRow(started.sessionId)).connected_at).not.toBeNull();
    expect(await terminalHeartbeatHint(sql, id, access)).toEqual(access);
    const second = await start(id, who); // replaces the first
    await sql`update terminal_sessions set expires_at = now() - interval '1 second' where id = ${second.sessionId}::uuid`;
    expect(await terminalHeartbeatHint(sql, id, access)).toEqual(access);
    const third = await start(id, who);
    await endSession(sql, third.sessionId, "closed");
    expect(await terminalHeartbeatHint(sql, id, access)).toEqual(access);
  });
});

describe("the sessions list", () => {
  test("newest first, by device, by operator (its text literal), in keyset pages", async () => {
    const a = await operator();
    const percent = await createOperator(database.db, {
      email: "100%_sure@terminal.test",
      password: "correct horse battery staple",
      role: "operator",
    });
    const b = { operatorId: percent.id, email: percent.email };
    const id = await device();
    const other = await device();
    const made: string[] = [];
    for (const [deviceId, who] of [
      [id, a],
      [other, b],
      [id, b],
      [id, a],
    ] as const) {
      made.push((await start(deviceId, who)).sessionId);
      await Bun.sleep(2); // distinct created_at
    }
    const onDevice = await listSessions(sql, { deviceId: id });
    expect(onDevice.sessions.map((s) => s.id)).toEqual([made[3], made[2], made[0]]);
    expect(onDevice.next).toBeUndefined();
    expect(onDevice.sessions[0]!.deviceName).not.toBe("");
    // `%` and `_` are literal: "0%_" matches only the address that has them.
    const byText = await listSessions(sql, { operator: " 0%_SURE " });
    expect(byText.sessions.map((s) => s.id)).toEqual([made[2], made[1]]);
    expect((await listSessions(sql, { operator: "0%", deviceId: other })).sessions.map((s) => s.id)).toEqual([
      made[1],
    ]);
    const first = await listSessions(sql, { deviceId: id, limit: 2 });
    expect(first.sessions.map((s) => s.id)).toEqual([made[3], made[2]]);
    expect(first.next).toBe(made[2]);
    const second = await listSessions(sql, { deviceId: id, limit: 2, before: first.next });
    expect(second.sessions.map((s) => s.id)).toEqual([made[0]]);
    expect(second.next).toBeUndefined();
    // Garbage filters are ignored, not errors.
    expect(
      (await listSessions(sql, { deviceId: "x", before: "y", operator: "   " })).sessions.length,
    ).toBeGreaterThanOrEqual(4);
  });

  test("getSession and sessionSeconds", async () => {
    const who = await operator();
    const started = await start(await device(), who);
    expect(await getSession(sql, "nope")).toBeUndefined();
    expect(await getSession(sql, crypto.randomUUID())).toBeUndefined();
    const session = (await getSession(sql, started.sessionId))!;
    expect([session.operatorEmail, session.deviceId, session.recordsInput]).toEqual([
      who.email,
      started.deviceId,
      false,
    ]);
    expect(sessionSeconds(session)).toBeUndefined();
    const connected = new Date("2026-01-01T00:00:00Z");
    expect(
      sessionSeconds({ ...session, connectedAt: connected, endedAt: new Date("2026-01-01T00:01:30.4Z") }),
    ).toBe(90);
    expect(
      sessionSeconds({ ...session, connectedAt: connected, endedAt: null }, connected.getTime() + 5_600),
    ).toBe(6);
    expect(
      sessionSeconds({ ...session, connectedAt: connected, endedAt: new Date("2025-12-31T23:59:00Z") }),
    ).toBe(0);
  });
});

describe("keys", () => {
  test("hostKeyText and parseHostKey: the canonical `type blob`, or nothing for what is no key", () => {
    const key = generateEd25519("c").public;
    const [type, blob] = key.split(" ");
    expect(hostKeyText(`  ${type} ${blob} comment here \n`)).toBe(`${type} ${blob}`);
    for (const bad of [
      undefined,
      5,
      "",
      "ssh-ed25519",
      "ssh-ed25519 not*base64",
      `${type} ${"A".repeat(2049)}`,
    ])
      expect(hostKeyText(bad)).toBeUndefined();
    const parsed = parseHostKey(key)!;
    expect(parsed.publicKey).toBe(`${type} ${blob}`);
    expect(parsed.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect(parseHostKey(`ssh-rsa ${blob}`)).toBeUndefined(); // type and blob disagree
    expect(parseHostKey("ssh-ed25519 AAAA")).toBeUndefined();
  });

  test("refHash: stable, and different per ref", () => {
    expect(refHash("a")).toBe(refHash("a"));
    expect(refHash("a")).not.toBe(refHash("b"));
    expect(refHash("a")).toMatch(/^[0-9a-f]{64}$/);
  });
});
