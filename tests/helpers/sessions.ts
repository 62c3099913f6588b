// (No bun:test import here: benches use it too.)
import { createOperator, createSession, type OperatorRole } from "../../modules/operators/service";
import { consoleCookieName, csrfTokenFor, SESSION_COOKIE } from "../../modules/platform/access";
import { sha256Hex } from "../../modules/platform/crypto";
import type { Db } from "../../modules/platform/database";

/**
 * A new operator of `role` and a signed-in browser session of theirs, for servers signing with
 * `secretKey` (an app started by the test, or `outpost start` processes on the same database);
 * `https` when the server's BASE_URL is https.
 */
export async function operatorSession(
  db: Db,
  secretKey: string,
  role: OperatorRole,
  options: { email?: string; https?: boolean } = {},
) {
  const email = options.email ?? `${role}-${crypto.randomUUID().slice(0, 8)}@example.test`;
  const operator = await createOperator(db, { email, password: "correct horse battery", role });
  const token = await createSession(db, { operatorId: operator.id, ttlHours: 1 });
  return {
    // The name the console reads (`__Host-` prefixed when its BASE_URL is https).
    cookie: `${consoleCookieName(SESSION_COOKIE, options.https === true)}=${token}`,
    csrf: csrfTokenFor(secretKey, sha256Hex(token)),
    email,
    operatorId: operator.id,
  };
}
