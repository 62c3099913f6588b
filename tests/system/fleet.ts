// The system suite's Outpost, deployed as in docs/deploy.md: two `web` processes, a `worker` and a
// `tunnel` process (OUTPOST_ROLE) on one PostgreSQL (a database of the test cluster), Caddy in front
// (the console on its own host with `tls internal`, device hosts with on-demand TLS asking
// check_domain, and a plain-HTTP front for the agents), an SMTP and a webhook receiver.
import { afterAll } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { generateEd25519 } from "../../modules/platform/host-key";
import { freePort, tempDir } from "../agent/helpers";
import { startHttpsReceiver, startSmtp } from "../alerts/receivers";
import { startCaddy } from "../helpers/caddy";
import { createTestDatabase } from "../helpers/database";
import { type OutpostProcess, REPO, startOutpostProcess } from "../helpers/process";

export const DOMAIN = "system.test";
export const DEVICE_DOMAIN = `devices.${DOMAIN}`;
export const CONSOLE_HOST = `console.${DOMAIN}`;
export const ADMIN = { email: "admin@system.test", password: "system-suite-admin-password" };
export const RUNNER = { id: "local-runner", token: `system-runner-${"r".repeat(40)}` };
const API_TOKEN = `system-suite-api-token-${"a".repeat(32)}`;

/** The suite's timing knobs: short, so every journey's waits are seconds (docs/testing.md). */
const KNOBS = {
  REMOTE_ACCESS_PAGE_GRACE_SECONDS: "1",
  ALERT_NOTIFY_MIN_INTERVAL_MINUTES: "0",
  DEVICE_ONLINE_WINDOW_SECONDS: "60",
  // Three agents polling every 2 s plus the wakes of remote access and terminals, behind one proxy.
  DEVICE_HEARTBEAT_RATE_LIMIT: "120",
  DEVICE_REGISTER_RATE_LIMIT: "1000",
};

export type Role = "web1" | "web2" | "worker" | "tunnel";

export interface Fleet {
  /** The console as operators reach it: https through Caddy (BASE_URL). */
  consoleUrl: string;
  /** Caddy's HTTPS port (console and device hosts). */
  httpsPort: number;
  /** The plain-HTTP front over both web processes: agents, install.sh and the E2E reporting use it. */
  agentUrl: string;
  /** Caddy's local CA root (curl trusts it through the agent's ~/.curlrc). */
  caddyRoot: string;
  tunnelSshPort: number;
  apiToken: string;
  sql: Awaited<ReturnType<typeof createTestDatabase>>["sql"];
  smtp: Awaited<ReturnType<typeof startSmtp>>;
  hook: ReturnType<typeof startHttpsReceiver>;
  processes: Record<Role, OutpostProcess>;
  /** SIGKILLs a role's process (as a crash would). */
  kill(role: Role): Promise<void>;
  /** Starts a role's process again with the same settings. */
  restart(role: Role): Promise<void>;
}

export async function startFleet(): Promise<Fleet> {
  const database = await createTestDatabase();
  const tmp = tempDir("outpost-system-");
  const hook = startHttpsReceiver();
  const hookCa = path.join(tmp.dir, "hook-ca.pem");
  writeFileSync(hookCa, hook.cert);
  const smtp = await startSmtp();
  const [web1Port, web2Port, sshPort, httpPort, dataPort, muxPort] = await Promise.all(
    Array.from({ length: 6 }, () => freePort()),
  );
  const storage = path.join(tmp.dir, "caddy");
  const webs = `reverse_proxy 127.0.0.1:${web1Port} 127.0.0.1:${web2Port} {
    lb_policy round_robin
    lb_try_duration 10s
    fail_duration 5s
    health_uri /healthz
    health_interval 1s
  }`;
  // Four ports from one: admin API, HTTP, HTTPS, the agents' plain-HTTP front.
  const caddy = await startCaddy({
    dir: tmp.dir,
    storage,
    global: `  on_demand_tls {
    ask http://127.0.0.1:${web1Port}/api/v1/check_domain
  }
`,
    sites: ({ port }) => `${CONSOLE_HOST} {
  bind 127.0.0.1
  tls internal
  ${webs}
}
https://*.${DEVICE_DOMAIN} {
  bind 127.0.0.1
  tls {
    on_demand
  }
  reverse_proxy 127.0.0.1:${httpPort}
}
http://127.0.0.1:${port + 3} {
  bind 127.0.0.1
  ${webs}
}
`,
  });
  const httpsPort = caddy.httpsPort;
  const consoleUrl = `https://${CONSOLE_HOST}:${httpsPort}`;
  const shared: Record<string, string> = {
    ...KNOBS,
    DATABASE_URL: database.url,
    SECRET_KEY: "system-suite-secret-key-0123456789abcdef",
    BASE_URL: consoleUrl,
    BASE_DOMAIN: DEVICE_DOMAIN,
    TUNNEL_HOST_KEY: generateEd25519("system-tunnel").private,
    TUNNEL_HOST: "127.0.0.1",
    TUNNEL_SSH_PORT: String(sshPort),
    TUNNEL_HTTP_PORT: String(httpPort),
    TUNNEL_DATA_PORT: String(dataPort),
    TUNNEL_MUX_PORT: String(muxPort),
    SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
    SMTP_FROM: "Outpost <alerts@system.test>",
    ALERT_WEBHOOK_ALLOW_LOOPBACK_FOR_TESTS: "true",
    NODE_EXTRA_CA_CERTS: hookCa,
    E2E_ENABLED: "true",
    E2E_CONFIG: path.join(REPO, "e2e/config.yaml"),
    OUTPOST_E2E_RUNNER_TOKEN: RUNNER.token,
    OUTPOST_BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
    OUTPOST_BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    OUTPOST_BOOTSTRAP_API_TOKEN: API_TOKEN,
    LOG_LEVEL: "info", // startOutpostProcess waits for the worker and tunnel roles' "started" lines
  };
  const envs: Record<Role, Record<string, string>> = {
    web1: { ...shared, OUTPOST_ROLE: "web", PORT: String(web1Port), DATA_DIR: path.join(tmp.dir, "web1") },
    web2: { ...shared, OUTPOST_ROLE: "web", PORT: String(web2Port), DATA_DIR: path.join(tmp.dir, "web2") },
    worker: { ...shared, OUTPOST_ROLE: "worker", DATA_DIR: path.join(tmp.dir, "worker") },
    tunnel: { ...shared, OUTPOST_ROLE: "tunnel", DATA_DIR: path.join(tmp.dir, "tunnel") },
  };
  // The first web process migrates and bootstraps; the others then start side by side.
  const processes = { web1: await startOutpostProcess(envs.web1, 60_000) } as Record<Role, OutpostProcess>;
  const [web2, worker, tunnel] = await Promise.all(
    (["web2", "worker", "tunnel"] as const).map((role) => startOutpostProcess(envs[role], 60_000)),
  );
  Object.assign(processes, { web2, worker, tunnel });
  afterAll(async () => {
    for (const role of ["tunnel", "worker", "web2", "web1"] as const) {
      const child = processes[role];
      if (child.process.exitCode === null && child.process.signalCode === null) await child.interrupt();
    }
    await caddy.stop();
    await smtp.stop();
    hook.stop();
    tmp.cleanup();
  });
  return {
    consoleUrl,
    httpsPort,
    agentUrl: `http://127.0.0.1:${caddy.port + 3}`,
    caddyRoot: caddy.rootCa,
    tunnelSshPort: sshPort,
    apiToken: API_TOKEN,
    sql: database.sql,
    smtp,
    hook,
    processes,
    async kill(role) {
      const child = processes[role].process;
      child.kill("SIGKILL");
      await child.exited;
    },
    async restart(role) {
      processes[role] = await startOutpostProcess(envs[role], 60_000, false);
    },
  };
}
