// `outpost login` and `outpost ssh` against a real server (all roles), a real agent, a real sshd and the
// real tunnel: an interactive session under tmux (typing, resize, exit status), `-- command`, recording
// and audit like the browser's, and the errors an operator meets.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { revokeApiToken } from "../../modules/operators/service";
import { readRecording } from "../../modules/terminal/recording";
import { approvedDevice } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { startDevice, type TestDevice, waitFor, waitForFirstHeartbeat } from "../terminal/helpers";
import { cliHome, OUTPOST, tmuxServer } from "./helpers";

let device: TestDevice;
// Hooks run in the order registered: the agent and its sshd stop before the app (the app's own hook,
// registered by startTestApp), so no tunnel or terminal of theirs is open when it stops.
afterAll(() => device?.stop()); // unset when the set-up failed before it
const app = await startTestApp({ BASE_DOMAIN: "cli.test" });
const home = cliHome();
const tmux = tmuxServer();
let deviceName: string;
let operatorToken: string;

beforeAll(async () => {
  device = await startDevice(app);
  const id = device.id;
  await waitForFirstHeartbeat(app.database.sql, id);
  const [row] = await app.database.sql<
    { mac_address: string }[]
  >`select mac_address from devices where id = ${id}`;
  deviceName = `device-${row!.mac_address.replace(/:/g, "")}`;
  operatorToken = await app.token("operator");
});

/** The device's name as the API shows it (what an operator types). */
async function nameOf(id: string): Promise<string> {
  const reply = await app.fetch(`/api/v1/devices?q=${encodeURIComponent(`"${id}"`)}`, {
    headers: { authorization: `Bearer ${operatorToken}` },
  });
  const { data } = (await reply.json()) as { data: { id: string; name: string }[] };
  return data.find((d) => d.id === id)!.name;
}

async function sessionRows() {
  return app.database.sql<
    {
      id: string;
      principal_kind: string;
      operator_email: string;
      end_reason: string | null;
      exit_status: number | null;
    }[]
  >`select id, principal_kind, operator_email, end_reason, exit_status from terminal_sessions order by created_at`;
}

describe("outpost login", () => {
  test("checks the token against the server and stores address and token 0600", async () => {
    const refused = await home.run(["login", "--url", app.url], { stdin: "opt_not-a-token\n" });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("the API token is invalid or revoked");
    const file = path.join(home.dir, "config", "outpost", "credentials.json");
    expect(() => statSync(file)).toThrow();

    const plain = await home.run(["login", "--url", "http://outpost.example.com"], {
      stdin: `${operatorToken}\n`,
    });
    expect(plain.code).toBe(2);
    expect(plain.stderr).toContain("https only");

    const signed = await home.run(["login", "--url", app.url], { stdin: `${operatorToken}\n` });
    expect(signed.stderr).toContain(`Signed in to ${app.url}`);
    expect(signed.code).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ url: app.url, token: operatorToken });
  }, 60_000);
});

describe("outpost ssh", () => {
  test("an interactive shell in the operator's terminal: typing, resize, exit status; recorded and audited", async () => {
    const before = (await sessionRows()).length;
    tmux.start("shell", `${OUTPOST} ssh ${deviceName}; echo "EXIT=$?"; sleep 60`, home.env(), 100, 30);
    const marker = `cli-${crypto.randomUUID().slice(0, 8)}`;
    // The shell is up when it answers: type until it does (the prompt differs between machines).
    const answered = new RegExp(`^${marker}-up\\s*$`, "m");
    await waitFor(
      async () => {
        tmux.keys("shell", `echo ${marker}-up`, "Enter");
        await Bun.sleep(1000);
        return answered.test(tmux.screen("shell"));
      },
      45_000,
      "the device's shell",
    ).catch((error) => {
      throw new Error(`${error.message}; the pane showed:\n${tmux.screen("shell")}`);
    });
    tmux.keys("shell", "stty size", "Enter");
    await tmux.waitFor("shell", "30 100");
    tmux.tmux("resize-window", "-t", "shell", "-x", "120", "-y", "40");
    await Bun.sleep(500);
    tmux.keys("shell", "clear; stty size", "Enter");
    await tmux.waitFor("shell", "40 120");
    tmux.keys("shell", "exit 7", "Enter");
    await tmux.waitFor("shell", "EXIT=7");
    // The terminal is back to normal (cooked) mode: the status line is printed as the shell printed it.
    const rows = await sessionRows();
    expect(rows.length).toBe(before + 1);
    const session = rows.at(-1)!;
    expect(session).toMatchObject({ principal_kind: "token", end_reason: "exit", exit_status: 7 });
    expect(session.operator_email).toStartWith("token test-operator-");
    const recording = await waitFor(
      async () => {
        const text = (await readRecording(app.database.sql, session.id))?.toString() ?? "";
        return text.includes("40 120") ? text : undefined;
      },
      10_000,
      "the recording",
    );
    expect(recording).toContain(`${marker}-up`);
    expect(recording).toContain('"r","120x40"');
    const audit = await app.database.sql<{ action: string; actor_kind: string }[]>`
      select action, actor_kind from audit_events
      where target = ${`terminal_session:${session.id}`} or (action = 'terminal.start' and details->>'device_id' = ${device.id})
      order by id`;
    expect(audit.map((a) => a.action)).toEqual(
      expect.arrayContaining(["terminal.start", "terminal.connect", "terminal.end"]),
    );
    expect(new Set(audit.map((a) => a.actor_kind))).toEqual(new Set(["token"]));
  }, 120_000);

  test("-- command: runs it, prints its output only and exits with its status", async () => {
    const ran = await home.run([
      "ssh",
      device.id,
      "--",
      "echo",
      "out-$((6*7))",
      ";",
      "echo",
      "err",
      ">&2",
      ";",
      "exit",
      "5",
    ]);
    expect({ code: ran.code, stdout: ran.stdout, stderr: ran.stderr }).toEqual({
      code: 5,
      stdout: "out-42\n",
      stderr: "err\n",
    });
    const fed = await home.run(["ssh", deviceName, "--", "wc", "-c"], { stdin: "four" });
    expect({ code: fed.code, stdout: fed.stdout.trim() }).toEqual({ code: 0, stdout: "4" });
    const session = (await sessionRows()).at(-1)!;
    expect(session).toMatchObject({ principal_kind: "token", end_reason: "exit", exit_status: 0 });
  }, 120_000);

  test("-- command: stdin reaches it byte for byte, in many frames, and then its end of file", async () => {
    // Every byte value, bytes that are not UTF-8 (a lone 0xff, a cut 3-byte sequence, NUL), and more
    // than one input frame's worth (48 KiB) so the command reads several.
    const bytes = Buffer.concat([
      Buffer.from([0x00, 0xff, 0xfe, 0xe2, 0x82, 0x0a, 0xc3, 0x28, 0x80, 0x0d]),
      Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
      randomBytes(200_000),
    ]);
    const digest = createHash("sha256").update(bytes).digest("hex");
    const env = { OUTPOST_URL: app.url, OUTPOST_API_TOKEN: operatorToken };
    const summed = await home.run(["ssh", device.id, "--", "sha256sum"], { stdin: bytes, env });
    expect({ code: summed.code, stdout: summed.stdout, stderr: summed.stderr }).toEqual({
      code: 0,
      stdout: `${digest}  -\n`,
      stderr: "",
    });
    // `cat` ends only when its input ends: EOF reaches the command after the last byte.
    const counted = await home.run(["ssh", device.id, "--", "cat", "|", "wc", "-c"], {
      stdin: bytes,
      env,
    });
    expect({ code: counted.code, stdout: counted.stdout.trim() }).toEqual({
      code: 0,
      stdout: String(bytes.length),
    });
  }, 120_000);

  test("clear errors: no credentials, invalid token, viewer token, unknown, ambiguous and offline devices", async () => {
    const bare = cliHome();
    const unsigned = await bare.run(["ssh", deviceName]);
    expect(unsigned).toMatchObject({ code: 2 });
    expect(unsigned.stderr).toContain("not signed in: run `outpost login`");

    const invalid = await home.run(["ssh", deviceName], { env: { OUTPOST_API_TOKEN: "opt_revoked" } });
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain("the API token is invalid or revoked");

    const viewer = await home.run(["ssh", device.id, "--", "true"], {
      env: { OUTPOST_API_TOKEN: await app.token("viewer") },
    });
    expect(viewer.code).toBe(1);
    expect(viewer.stderr).toContain("remote access not allowed");

    const unknown = await home.run(["ssh", "no-such-gateway"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('device not found: no approved device matches "no-such-gateway"');

    const offline = await approvedDevice(app);
    const offlineName = await nameOf(offline.id);
    const asleep = await home.run(["ssh", offlineName]);
    expect(asleep.code).toBe(1);
    expect(asleep.stderr).toContain(`${offlineName} is offline`);

    // Display names `pump-1` and `pump-10`: "pump" matches both, "pump-1" is one's exact name.
    for (const [id, name] of [
      [device.id, "pump-1"],
      [offline.id, "pump-10"],
    ] as const) {
      const named = await app.fetch(`/api/v1/devices/${id}/profile`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${operatorToken}`, "content-type": "application/json" },
        body: JSON.stringify({ display_name: name }),
      });
      expect(named.status).toBe(200);
    }
    const ambiguous = await home.run(["ssh", "pump"]);
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr).toContain('"pump" is ambiguous: 2 devices match');
    expect(ambiguous.stderr).toContain(`pump-1  ${device.id}  online`);
    expect(ambiguous.stderr).toContain(`pump-10  ${offline.id}  offline`);
    const exact = await home.run(["ssh", "pump-1", "--", "echo", "exact"]);
    expect({ code: exact.code, stdout: exact.stdout }).toEqual({ code: 0, stdout: "exact\n" });
  }, 120_000);

  test("a revoked token ends its running session; the device's sshd refusing the key is said so", async () => {
    const revocable = await app.token("operator");
    const [tokenRow] = await app.database.sql<{ id: string }[]>`
      select id from api_tokens where token_hash = encode(sha256(${revocable}::bytea), 'hex')`;
    tmux.start(
      "revoked",
      `${OUTPOST} ssh ${device.id}; echo "EXIT=$?"; sleep 60`,
      home.env({ OUTPOST_URL: app.url, OUTPOST_API_TOKEN: revocable }),
    );
    const marker = `rv-${crypto.randomUUID().slice(0, 6)}`;
    const answered = new RegExp(`^${marker}\\s*$`, "m");
    await waitFor(
      async () => {
        tmux.keys("revoked", `echo ${marker}`, "Enter");
        await Bun.sleep(1000);
        return answered.test(tmux.screen("revoked"));
      },
      45_000,
      "the device's shell",
    ).catch((error) => {
      throw new Error(`${error.message}; the pane showed:\n${tmux.screen("revoked")}`);
    });
    expect(await revokeApiToken(app.database.db, tokenRow!.id)).toBe(true);
    const screen = await tmux.waitFor("revoked", "EXIT=255", 20_000);
    expect(screen).toContain("outpost: session ended: Operator disabled");

    // A device whose agent authorizes keys for a user its sshd does not let in (AllowUsers).
    const refusing = await startDevice(app, { settings: { ssh_target_user: "nobody" } });
    try {
      const id = refusing.id;
      await waitForFirstHeartbeat(app.database.sql, id, 20_000, "the second agent's first heartbeat");
      const refused = await home.run(["ssh", id, "--", "true"], {
        env: { OUTPOST_URL: app.url, OUTPOST_API_TOKEN: operatorToken },
      });
      expect(refused.code).toBe(255);
      expect(refused.stderr).toContain("outpost: the device's sshd refused the session key");
    } finally {
      await refusing.stop();
    }
  }, 150_000);
});
