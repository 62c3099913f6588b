import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { Client } from "ssh2";
import { executeCommands } from "../../agent/commands/executor.ts";
import type { CommandContext } from "../../agent/commands/types.ts";
import { ScriptStore } from "../../agent/scripts/store.ts";
import { generateEd25519 } from "../../modules/platform/host-key.ts";
import { type ListeningProcess, startSshd } from "../helpers/listener.ts";
import { logger, tempDir, testConfig, waitForFile } from "./helpers.ts";

const SSHD = "/usr/sbin/sshd";
const tmp = tempDir("outpost-sshd-");
let sshd: ListeningProcess | null = null;
let port = 0;
let ctx: CommandContext;

beforeAll(async () => {
  if (!(await waitForFile(SSHD))) throw new Error(`${SSHD} is not installed`);
  const hostKey = path.join(tmp.dir, "host_ed25519");
  fs.writeFileSync(hostKey, generateEd25519().private, { mode: 0o600 });
  const config = testConfig(tmp.dir);
  ctx = { config, store: new ScriptStore(config.scripts_dir), logger };
  sshd = await startSshd(tmp.dir, hostKey, [
    `AuthorizedKeysFile ${config.authorized_keys_path}`,
    "PubkeyAuthentication yes",
    "PermitRootLogin prohibit-password",
    `AllowUsers ${process.env.USER ?? "root"}`,
    "LogLevel VERBOSE",
  ]);
  port = sshd.port;
});

afterAll(async () => {
  await sshd?.stop();
  tmp.cleanup();
});

/** Try to log in with the private key and run a command; resolves to its output or the auth error. */
function trySsh(privateKey: string): Promise<string> {
  return new Promise((resolve) => {
    const client = new Client();
    const timer = setTimeout(() => {
      client.end();
      resolve(`timeout; sshd said:\n${sshd?.log().slice(-2000)}`);
    }, 8000);
    client
      .on("ready", () => {
        client.exec("echo authorized-$((40+2))", (err, stream) => {
          if (err) {
            clearTimeout(timer);
            client.end();
            return resolve(`exec error: ${err.message}`);
          }
          let out = "";
          stream.on("data", (d: Buffer) => {
            out += d.toString();
          });
          stream.on("close", () => {
            clearTimeout(timer);
            client.end();
            resolve(out.trim());
          });
        });
      })
      .on("error", (err) => {
        clearTimeout(timer);
        resolve(`error: ${err.message}`);
      })
      .connect({
        host: "127.0.0.1",
        port,
        username: process.env.USER ?? "root",
        privateKey,
        readyTimeout: 7000,
      });
  });
}

describe("ssh_authorize against a real OpenSSH sshd", () => {
  test("the key is accepted after ssh_authorize and refused after ssh_revoke", async () => {
    const pair = generateEd25519("outpost-test");
    expect(await trySsh(pair.private)).toMatch(/All configured authentication methods failed/);
    const [auth] = await executeCommands(
      [
        {
          command_id: "a",
          type: "ssh_authorize",
          args: { public_key: pair.public, ttl_seconds: 300, session_ref: "term-1" },
        },
      ],
      ctx,
    );
    expect(auth.status).toBe("OK");
    expect(await trySsh(pair.private)).toBe("authorized-42");
    const [revoke] = await executeCommands(
      [{ command_id: "r", type: "ssh_revoke", args: { session_ref: "term-1" } }],
      ctx,
    );
    expect(revoke.output).toMatchObject({ revoked: 1 });
    expect(await trySsh(pair.private)).toMatch(/All configured authentication methods failed/);
  }, 30000);

  test("sshd stops accepting the key once expiry-time has passed", async () => {
    const pair = generateEd25519();
    const [auth] = await executeCommands(
      [
        {
          command_id: "b",
          type: "ssh_authorize",
          args: { public_key: pair.public, ttl_seconds: 2, session_ref: "term-2" },
        },
      ],
      ctx,
    );
    expect(auth.status).toBe("OK");
    expect(await trySsh(pair.private)).toBe("authorized-42");
    const expiresAt = Date.parse((auth.output as { expires_at: string }).expires_at);
    await Bun.sleep(Math.max(0, expiresAt - Date.now()) + 1200);
    expect(await trySsh(pair.private)).toMatch(/All configured authentication methods failed/);
  }, 30000);
});
