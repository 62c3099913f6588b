// Trying the browser terminal on a machine without the Debian package: `install.sh --prefix <dir>
// --ssh-port <port>` sets up what the package's support user and sshd drop-in give (a private sshd on
// loopback for this user, keys from the file the agent writes) and starts it. The installed agent, as
// install.sh configured it, then carries a real terminal session: a command typed in it runs.
import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { createEnrolmentToken } from "../../modules/enrolment/service";
import { isAlive } from "../../modules/platform/embedded-postgres";
import { freePort, tempDir } from "../agent/helpers";
import { agentBinary } from "../helpers/agent-binary";
import { startTestApp } from "../helpers/app";
import { joinedSocket, startTerminal, waitFor, waitForFirstHeartbeat } from "../terminal/helpers";
import { INSTALL_LINE, runShell } from "./helpers";

const app = await startTestApp({ BASE_DOMAIN: "term.test" });
const tmp = tempDir("outpost-install-terminal-");
const root = path.join(tmp.dir, "root");
const pidFile = path.join(root, "run/outpost-sshd.pid");
let agent: ReturnType<typeof Bun.spawn> | undefined;
afterAll(async () => {
  agent?.kill("SIGTERM");
  await agent?.exited;
  const pid = Number(fs.existsSync(pidFile) ? fs.readFileSync(pidFile, "utf8") : 0);
  if (pid > 0 && isAlive(pid)) process.kill(pid, "SIGTERM");
  tmp.cleanup();
});

const install = (args: string[]) => runShell(INSTALL_LINE, args, { URL: app.url, HOME: tmp.dir });

describe("install.sh --prefix --ssh-port", () => {
  test("--ssh-port without --prefix is refused (the package gives a full install its sshd drop-in)", async () => {
    const run = await install(["--token", "oen_x", "--ssh-port", "2222"]);
    expect(run.code).not.toBe(0);
    expect(run.err).toContain("--ssh-port goes with --prefix");
  });

  test("a terminal session through the sshd it set up; a second run changes nothing", async () => {
    await agentBinary("x64");
    const { token } = await createEnrolmentToken(app.database.sql, {
      name: "terminal",
      approve: true,
      createdBy: "test",
    });
    const port = await freePort();
    const first = await install(["--token", token, "--prefix", root, "--ssh-port", String(port)]);
    expect(first.code).toBe(0);
    expect(first.out).toContain(`started: sshd on 127.0.0.1:${port} for the browser terminal`);
    expect(first.out).toContain("Registered as");
    const config = fs.readFileSync(path.join(root, "etc/outpost/agent.yaml"), "utf8");
    expect(config).toContain(`  ssh_target: 127.0.0.1:${port}`);
    const second = await install(["--token", token, "--prefix", root, "--ssh-port", String(port)]);
    expect(second.code).toBe(0);
    expect(second.out).toContain(`unchanged: sshd on 127.0.0.1:${port}`);

    // The agent as install.sh configured it; only the tunnel's port is this test app's own.
    agent = Bun.spawn(
      [
        path.join(root, "usr/local/bin/outpost-agent"),
        "--config",
        path.join(root, "etc/outpost/agent.yaml"),
        "poll",
      ],
      {
        env: {
          PATH: "/usr/bin:/bin",
          HOME: tmp.dir,
          OUTPOST_AGENT_TUNNEL_SERVER: `127.0.0.1:${app.running.tunnel!.sshPort}`,
          OUTPOST_AGENT_POLL_INTERVAL_S: "3",
        },
        stdout: "ignore",
        stderr: "ignore",
      },
    );
    const [device] = await app.database.sql<{ id: string }[]>`select id from devices`;
    await waitForFirstHeartbeat(app.database.sql, device!.id, 30_000);
    const operator = await app.session("operator");
    const started = await startTerminal(app, device!.id, operator);
    expect(started.status).toBe(201);
    const socket = await joinedSocket(app, started.data, operator.cookie);
    socket.send({ event: "input", payload: { data: "echo via-prefix-$((6*7))\r" } });
    await waitFor(() => socket.output().includes("via-prefix-42"), 15_000, "the command's output").catch(
      (error) => {
        throw new Error(`${error.message}; the terminal showed ${JSON.stringify(socket.output())}`);
      },
    );
    socket.ws.close();
  }, 180_000);
});
