/**
 * A heartbeat's `ssh_host_key` (modules/terminal/host-keys.ts): the batch statement finds the few that
 * need writing (a first key, a changed one, a change withdrawn) and only those get a statement of their
 * own; the pinned key reported again costs none, whatever this process remembers or the fleet's size.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import ssh2 from "ssh2";
import { startTestApp } from "../helpers/app";
import { approvedDevice, countStatements, heartbeatUrl, json, sampleHeartbeat } from "./helpers";

const app = await startTestApp();
const sql = app.database.sql;

let hostKeyStatements: () => Promise<number>;

beforeAll(async () => {
  hostKeyStatements = await countStatements(app, "device_host_keys", "insert or update");
});

/**
 * A fresh ed25519 public key line. ssh2 drops a leading zero byte of the key (about 1 in 256 keys), which
 * leaves a 31-byte key that the server rightly refuses as none: such keys are drawn again.
 */
function newKey(): string {
  for (let attempt = 0; attempt < 50; attempt++) {
    const key = ssh2.utils.generateKeyPairSync("ed25519").public.trim().split(" ").slice(0, 2).join(" ");
    if (key.startsWith("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI")) return key; // a 32-byte key
  }
  throw new Error("no well-formed ed25519 key in 50 draws");
}

describe("SSH host keys in heartbeats", () => {
  test("pinned by the first heartbeat, reported when changed, withdrawn when back; the same key again writes nothing", async () => {
    const device = await approvedDevice(app);
    const beat = async (sshHostKey: string) => {
      const response = await app.fetch(
        heartbeatUrl(device.id, device.token),
        json({ ...sampleHeartbeat(), ssh_host_key: sshHostKey }),
      );
      expect(response.status).toBe(200);
    };
    const stored = async () =>
      (
        await sql<{ public_key: string; reported_key: string | null; pinned_by: string }[]>`
          select public_key, reported_key, pinned_by from device_host_keys where device_id = ${device.id}`
      )[0];
    const [pinned, other] = [newKey(), newKey()];

    await beat(`${pinned} root@atom\r\n`); // as read from the file, line end and all
    expect(await stored()).toEqual({ public_key: pinned, reported_key: null, pinned_by: "first heartbeat" });
    let statements = await hostKeyStatements();
    await beat(pinned);
    await beat(`${pinned} another-comment`);
    expect(await hostKeyStatements()).toBe(statements); // the steady state: no statement at all

    await beat(other);
    expect(await stored()).toEqual({ public_key: pinned, reported_key: other, pinned_by: "first heartbeat" });
    statements = await hostKeyStatements();
    await beat(other); // the change already reported: nothing to write
    expect(await hostKeyStatements()).toBe(statements);

    await beat(pinned); // the device shows its pinned key again: the report is withdrawn
    expect(await stored()).toEqual({ public_key: pinned, reported_key: null, pinned_by: "first heartbeat" });

    await beat("ssh-ed25519 AAAAnotakey"); // shaped like a key, but not one: answered, nothing stored
    expect(await stored()).toEqual({ public_key: pinned, reported_key: null, pinned_by: "first heartbeat" });
  });

  test("a device that never reported a key, and one reporting a key that is none, get no row", async () => {
    const [silent, broken] = await Promise.all([approvedDevice(app), approvedDevice(app)]);
    const responses = await Promise.all([
      app.fetch(heartbeatUrl(silent.id, silent.token), json(sampleHeartbeat())),
      app.fetch(
        heartbeatUrl(broken.id, broken.token),
        json({ ...sampleHeartbeat(), ssh_host_key: "not a key ✗" }),
      ),
    ]);
    expect(responses.map((r) => r.status)).toEqual([200, 200]);
    const rows = await sql`select 1 from device_host_keys where device_id in (${silent.id}, ${broken.id})`;
    expect(rows.length).toBe(0);
  });
});
