// Device authentication (`?api_key=`): the checks every device runtime call makes, in the spec's order.
import { constantTimeEqual, sha256Hex } from "../platform/crypto";
import type { Sql } from "../platform/database";
import { AppError } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import type { ApprovalStatus } from "./rows";

export type AuthRow = {
  approval_status: ApprovalStatus;
  api_token_hash: string | null;
  heartbeat_window_started_at: Date | null;
  heartbeat_window_count: number;
};

export async function authRow(sql: Sql, deviceId: string): Promise<AuthRow> {
  if (!isUuid(deviceId)) throw deviceNotFound();
  const [row] = await sql<AuthRow[]>`
    select approval_status, api_token_hash, heartbeat_window_started_at, heartbeat_window_count
    from devices where id = ${deviceId}::uuid`;
  if (!row) throw deviceNotFound();
  return row;
}

export const deviceNotFound = () => new AppError(404, "device_not_found", "Device not found");
const missingApiKey = () => new AppError(401, "missing_api_key", "API key is required");

/** The checks in their fixed order: 404 device_not_found, 401 missing_api_key, 403 device_not_approved, 401 invalid_api_key. */
export function checkCredentials(row: AuthRow, apiKey: string | undefined): void {
  if (!apiKey) throw missingApiKey();
  if (row.approval_status !== "approved")
    throw new AppError(403, "device_not_approved", "Device is not approved");
  if (!row.api_token_hash) throw missingApiKey();
  if (!constantTimeEqual(sha256Hex(apiKey), row.api_token_hash)) {
    throw new AppError(401, "invalid_api_key", "API key is invalid");
  }
}

/** Authenticates a device runtime call (`?api_key=`); throws the typed error otherwise. */
export async function authenticateDevice(
  sql: Sql,
  deviceId: string,
  apiKey: string | undefined,
): Promise<void> {
  checkCredentials(await authRow(sql, deviceId), apiKey);
}

/** `?api_key=` as sent (query only, never the body). */
export function apiKeyOf(query: Record<string, unknown>): string | undefined {
  const value = query.api_key;
  return typeof value === "string" && value !== "" ? value : undefined;
}
