import { afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type RunningOutpost, startOutpost } from "../../app";
import {
  createApiToken,
  createOperator,
  createSession,
  type OperatorRole,
} from "../../modules/operators/service";
import { consoleCookieName, csrfTokenFor, SESSION_COOKIE } from "../../modules/platform/access";
import { type Config, loadConfig } from "../../modules/platform/config";
import { sha256Hex } from "../../modules/platform/crypto";
import { createLogger } from "../../modules/platform/logger";
import { createTestDatabase, type TestDatabase } from "./database";
import { TUNNEL_FREE_PORTS } from "./process";

export interface TestApp {
  url: string;
  config: Config;
  database: TestDatabase;
  running: RunningOutpost;
  /** Setup codes the app announced (printed on the console outside tests), oldest first. */
  announcedSetupCodes: string[];
  /** Fetch relative to the app, never following redirects. */
  fetch(pathname: string, init?: RequestInit): Promise<Response>;
  /** An API token of `role`. */
  token(role: OperatorRole): Promise<string>;
  /** A signed-in browser session of a new operator of `role`. */
  session(role: OperatorRole): Promise<{ cookie: string; csrf: string; email: string; operatorId: string }>;
  stop(): Promise<void>;
}

/** Starts the whole app (all roles unless env says otherwise) on a random port and a fresh database. */
export async function startTestApp(env: Record<string, string> = {}): Promise<TestApp> {
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
  const running = await startOutpost(config, createLogger(config.logLevel), {
    announceSetupCode: (code) => announcedSetupCodes.push(code),
  });
  const url = running.url!;
  let counter = 0;
  const app: TestApp = {
    url,
    config,
    database,
    running,
    announcedSetupCodes,
    fetch: (pathname, init) => fetch(`${url}${pathname}`, { redirect: "manual", ...init }),
    async token(role) {
      return (await createApiToken(database.db, { name: `test-${role}-${++counter}`, role })).token;
    },
    async session(role) {
      const email = `${role}-${++counter}-${crypto.randomUUID().slice(0, 8)}@example.test`;
      const operator = await createOperator(database.db, { email, password: "correct horse battery", role });
      const token = await createSession(database.db, { operatorId: operator.id, ttlHours: 1 });
      return {
        // The name the console reads (`__Host-` prefixed when BASE_URL is https).
        cookie: `${consoleCookieName(SESSION_COOKIE, config.baseUrl.startsWith("https:"))}=${token}`,
        csrf: csrfTokenFor(config.secretKey, sha256Hex(token)),
        email,
        operatorId: operator.id,
      };
    },
    async stop() {
      await running.stop();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
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
