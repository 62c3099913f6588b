import { afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type RunningOutpost, startOutpost } from "../../app";
import type { WebhookTransport } from "../../modules/alerts/notifications/webhook";
import { createApiToken, type OperatorRole } from "../../modules/operators/service";
import { type Config, loadConfig } from "../../modules/platform/config";
import { createLogger } from "../../modules/platform/logger";
import type { Services } from "../../services";
import { TestClock } from "./clock";
import { createTestDatabase, type TestDatabase } from "./database";
import { TUNNEL_FREE_PORTS } from "./process";
import { operatorSession } from "./sessions";

export interface TestApp {
  url: string;
  config: Config;
  database: TestDatabase;
  running: RunningOutpost;
  /** The app's services (settings, live hub, device waits…), as its routes and jobs use them. */
  services: Services;
  /** The app's clock: `await app.clock.advance(ms)` instead of sleeping for a cache or a timer. */
  clock: TestClock;
  /** Setup codes the app announced (printed on the console outside tests), oldest first. */
  announcedSetupCodes: string[];
  /** Fetch relative to the app, never following redirects. */
  fetch(pathname: string, init?: RequestInit): Promise<Response>;
  /** An API token of `role`. */
  token(role: OperatorRole): Promise<string>;
  /** A signed-in browser session of a new operator of `role`. */
  session(role: OperatorRole): Promise<{ cookie: string; csrf: string; email: string; operatorId: string }>;
  /**
   * `stop` runs when the app stops, before it (a device's agent and sshd started on it): whichever
   * afterAll hook comes first, nothing of the device holds the app's stop open.
   */
  stopsFirst(stop: () => Promise<void>): void;
  /** Stops what stopsFirst named, then the app; once, however many times it is called. */
  stop(): Promise<void>;
}

export interface TestAppOptions {
  /** How alert webhooks resolve and which certificates they trust (a test receiver's). */
  webhook?: WebhookTransport;
}

/** Starts the whole app (all roles unless env says otherwise) on a random port and a fresh database. */
export async function startTestApp(
  env: Record<string, string> = {},
  options: TestAppOptions = {},
): Promise<TestApp> {
  const database = await createTestDatabase({ dropAfterAll: false });
  const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-test-data-"));
  const config = loadConfig({
    DATABASE_URL: database.url,
    DATA_DIR: dataDir,
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    SECRET_KEY: "test-secret-key-test-secret-key-0123456789",
    // Tests register many devices from 127.0.0.1; tests/devices/rate-limits.test.ts sets its own.
    DEVICE_REGISTER_RATE_LIMIT: "100000",
    ...TUNNEL_FREE_PORTS,
    ...env,
  });
  const announcedSetupCodes: string[] = [];
  const clock = new TestClock();
  const running = await startOutpost(config, createLogger(config.logLevel), {
    announceSetupCode: (code) => announcedSetupCodes.push(code),
    clock,
    webhook: options.webhook,
  });
  const url = running.url!;
  let counter = 0;
  const first: (() => Promise<void>)[] = [];
  let stopped: Promise<void> | undefined;
  const app: TestApp = {
    url,
    config,
    database,
    running,
    services: running.services,
    clock,
    announcedSetupCodes,
    fetch: (pathname, init) => fetch(`${url}${pathname}`, { redirect: "manual", ...init }),
    async token(role) {
      return (await createApiToken(database.db, { name: `test-${role}-${++counter}`, role })).token;
    },
    async session(role) {
      return operatorSession(database.db, config.secretKey, role, {
        email: `${role}-${++counter}-${crypto.randomUUID().slice(0, 8)}@example.test`,
        https: config.baseUrl.startsWith("https:"),
      });
    },
    stopsFirst(stop) {
      first.push(stop);
    },
    stop() {
      stopped ??= (async () => {
        // An agent with its tunnel, forwards or terminals open kept the app's stop waiting past the
        // hook's 60 s limit in CI (afterAll hooks run in the order registered, the app's often first).
        for (const stop of first.splice(0).reverse()) await stop();
        await running.stop();
        await database.drop();
        rmSync(dataDir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
  afterAll(() => app.stop());
  return app;
}

/** A form body as browsers send it. */
export function form(fields: Record<string, string>, headers: Record<string, string> = {}): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  };
}
