// (No bun:test import here: benches use it too.)
import { createOperator, createSession, type OperatorRole } from "../../modules/operators/service";
import { csrfTokenFor, SESSION_COOKIE } from "../../modules/platform/access";
import { sha256Hex } from "../../modules/platform/crypto";
import type { Db } from "../../modules/platform/database";

/**
 * A new operator of `role` and a signed-in browser session of theirs, for servers signing with
 * `secretKey` (an app started by the test, or `outpost start` processes on the same database).
 */
export async function operatorSession(
  db: Db,
  secretKey: string,
  role: OperatorRole,
  email = `${role}-${crypto.randomUUID().slice(0, 8)}@example.test`,
) {
  const operator = await createOperator(db, { email, password: "correct horse battery", role });
  const token = await createSession(db, { operatorId: operator.id, ttlHours: 1 });
  return {
    cookie: `${SESSION_COOKIE}=${token}`,
    csrf: csrfTokenFor(secretKey, sha256Hex(token)),
    email,
    operatorId: operator.id,
  };
}
