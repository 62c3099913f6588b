import { createHash, timingSafeEqual } from "node:crypto";
import { AppError } from "../platform/errors";
import { type E2EConfig, MIN_TOKEN_BYTES, RUNNER_ID_PATTERN } from "./config";

export const PROTOCOL_HEADER = "x-e2e-protocol-version";
export const RUNNER_HEADER = "x-e2e-runner-id";

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

const DUMMY_DIGEST = digest("outpost-e2e-no-such-runner-padding-000000");

/**
 * Checks X-E2E-Runner-ID + Authorization: Bearer against the configured runners. The token
 * comparison takes the same time whether the runner exists, and wherever the tokens differ.
 */
export function authenticateRunner(
  e2e: E2EConfig,
  runnerId: string | null,
  authorization: string | null,
): string {
  const fail = () => new AppError(401, "unauthorized", "Valid E2E runner credentials are required.");
  const match = authorization?.match(/^bearer\s+(\S+)\s*$/i);
  const token = match?.[1] ?? "";
  const id = runnerId?.trim() ?? "";
  const expected = e2e.runners.get(id);
  const same = timingSafeEqual(digest(token), expected ? digest(expected) : DUMMY_DIGEST);
  if (!RUNNER_ID_PATTERN.test(id) || Buffer.byteLength(token) < MIN_TOKEN_BYTES || !expected || !same)
    throw fail();
  return id;
}
