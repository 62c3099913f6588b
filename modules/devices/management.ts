// Operator decisions on devices: approval (single and bulk), edits, deletion, the remote-access flag.
import type { Sql } from "../platform/database";
import { AppError, badRequest } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import { isOneLine } from "../platform/text-input";
import { deleteDeviceTelemetry } from "../telemetry/service";
import {
  APPROVAL_STATUSES,
  type ApprovalStatus,
  type Device,
  type DeviceRow,
  deviceColumns,
  toDevice,
} from "./rows";
import {
  DEVICE_NAME_MAX,
  DEVICE_NOTES_MAX,
  ipv4From,
  PRODUCT_NAME_MAX,
  validateMetadata,
} from "./validation";

/** Most devices one approval or rejection may change. */
export const APPROVAL_BATCH_MAX = 1000;

/**
 * Approves or rejects devices that are still pending, all in one statement (one transaction);
 * devices already approved or rejected are left as they are. Returns the ids that changed.
 */
export async function setApprovalStatus(
  sql: Sql,
  ids: string[],
  status: "approved" | "rejected",
): Promise<string[]> {
  if (ids.length === 0) throw badRequest("Select at least one device", { field: "ids" });
  if (ids.length > APPROVAL_BATCH_MAX)
    throw badRequest(`At most ${APPROVAL_BATCH_MAX} devices at once`, { field: "ids" });
  const valid = [...new Set(ids.filter(isUuid).map((id) => id.toLowerCase()))];
  if (valid.length === 0) return [];
  const rows = await sql<{ id: string }[]>`
    update devices set approval_status = ${status}::device_approval_status, approval_changed_at = now(), updated_at = now()
    where id in (
      -- Rows are locked in id order, so concurrent bulk changes cannot deadlock.
      select id from devices where id = any(${valid}::uuid[]) and approval_status = 'pending' order by id for update)
      and approval_status = 'pending'
    returning id`;
  return rows.map((r) => r.id);
}

export const approveDevices = (sql: Sql, ids: string[]) => setApprovalStatus(sql, ids, "approved");
export const rejectDevices = (sql: Sql, ids: string[]) => setApprovalStatus(sql, ids, "rejected");

export interface DeviceUpdate {
  approvalStatus?: ApprovalStatus;
  productName?: string | null;
  metadata?: Record<string, unknown>;
}

/** The fields an operator changes on a device (updateDevice), as the audit log shows them. */
export function editableFields(device: Device): Record<string, unknown> {
  return {
    approval_status: device.approvalStatus,
    product_name: device.productName,
    metadata: device.metadata,
  };
}

/**
 * Edits a device. approval_status may move pending → approved | rejected, or approved → rejected
 * (a revocation: the token is cleared and remote access ends); other transitions are 409
 * invalid_transition. Undefined when the device does not exist.
 */
export async function updateDevice(
  sql: Sql,
  id: string,
  update: DeviceUpdate,
  options: { onlineWindowSeconds: number },
): Promise<Device | undefined> {
  if (!isUuid(id)) return undefined;
  if (
    update.approvalStatus !== undefined &&
    !(APPROVAL_STATUSES as readonly string[]).includes(update.approvalStatus)
  ) {
    throw badRequest(`approval_status must be one of ${APPROVAL_STATUSES.join(", ")}`, {
      field: "approval_status",
    });
  }
  if (
    update.productName !== undefined &&
    update.productName !== null &&
    (typeof update.productName !== "string" || update.productName.length > PRODUCT_NAME_MAX)
  ) {
    throw badRequest(`product_name must be a string of at most ${PRODUCT_NAME_MAX} characters`, {
      field: "product_name",
    });
  }
  const metadata = update.metadata === undefined ? undefined : validateMetadata(update.metadata);
  return sql.begin(async (tx) => {
    const [current] = await tx<{ approval_status: ApprovalStatus }[]>`
      select approval_status from devices where id = ${id}::uuid for update`;
    if (!current) return undefined;
    const next = update.approvalStatus;
    const revokes = current.approval_status === "approved" && next === "rejected";
    if (
      next !== undefined &&
      next !== current.approval_status &&
      current.approval_status !== "pending" &&
      !revokes
    ) {
      throw new AppError(
        409,
        "invalid_transition",
        `Cannot change approval from ${current.approval_status} to ${next}`,
      );
    }
    if (next !== undefined && next !== current.approval_status && next === "pending") {
      throw new AppError(409, "invalid_transition", "Cannot change approval back to pending");
    }
    const changesApproval = next !== undefined && next !== current.approval_status;
    await tx`
      update devices set
        approval_status = ${next ?? current.approval_status}::device_approval_status,
        approval_changed_at = case when ${changesApproval} then now() else approval_changed_at end,
        api_token_hash = case when ${revokes} then null else api_token_hash end,
        remote_access_requested = case when ${revokes} then false else remote_access_requested end,
        product_name = case when ${update.productName !== undefined} then ${update.productName?.trim() || null} else product_name end,
        metadata = case when ${metadata !== undefined} then ${JSON.stringify(metadata ?? {})}::jsonb else metadata end,
        ipv4_address = case when ${metadata !== undefined} then ${ipv4From(metadata)} else ipv4_address end,
        updated_at = now()
      where id = ${id}::uuid`;
    const [row] = await tx<DeviceRow[]>`
      select ${deviceColumns(tx as unknown as Sql, options.onlineWindowSeconds)} from devices d where d.id = ${id}::uuid`;
    return toDevice(row!);
  });
}

/**
 * Sets operators' display name and notes (undefined: unchanged; null or blank: cleared, so the
 * reported or MAC-derived name shows again). Returns the previous values, or undefined when the
 * device does not exist.
 */
export async function setDeviceProfile(
  sql: Sql,
  id: string,
  profile: { displayName?: string | null; notes?: string | null },
): Promise<{ displayName: string | null; notes: string | null } | undefined> {
  if (!isUuid(id)) return undefined;
  const name = profile.displayName?.trim() || null;
  const notes = profile.notes?.trim() || null;
  if (name !== null && (name.length > DEVICE_NAME_MAX || !isOneLine(name)))
    throw badRequest(`The display name must be at most ${DEVICE_NAME_MAX} characters on one line`, {
      field: "display_name",
    });
  if (notes !== null && notes.length > DEVICE_NOTES_MAX)
    throw badRequest(`Notes must be at most ${DEVICE_NOTES_MAX} characters`, { field: "notes" });
  const [row] = await sql<{ display_name: string | null; notes: string | null }[]>`
    with before as (select id, display_name, notes from devices where id = ${id}::uuid for update)
    update devices d set
      display_name = case when ${profile.displayName !== undefined} then ${name} else d.display_name end,
      notes = case when ${profile.notes !== undefined} then ${notes} else d.notes end,
      updated_at = now()
    from before where d.id = before.id
    returning before.display_name, before.notes`;
  return row && { displayName: row.display_name, notes: row.notes };
}

/** Deletes a device, its commands (cascade) and its telemetry. */
export async function deleteDevice(sql: Sql, id: string): Promise<boolean> {
  if (!isUuid(id)) return false;
  return sql.begin(async (tx) => {
    const deleted = await tx`delete from devices where id = ${id}::uuid`;
    if (deleted.count === 0) return false;
    await deleteDeviceTelemetry(tx as unknown as Sql, id);
    return true;
  });
}

/** Sets the remote-access flag (the remote-access module drives it). */
export async function setRemoteAccessRequested(sql: Sql, id: string, requested: boolean): Promise<boolean> {
  if (!isUuid(id)) return false;
  const result = await sql`update devices set remote_access_requested = ${requested}, updated_at = now()
    where id = ${id}::uuid and remote_access_requested is distinct from ${requested}`;
  return result.count > 0;
}

/**
 * Revokes an approved device: rejected, its token cleared (its requests fail from now on), remote
 * access no longer requested. Undefined when the device does not exist; 409 when it is not approved.
 */
export async function revokeDevice(
  sql: Sql,
  id: string,
  options: { onlineWindowSeconds: number },
): Promise<Device | undefined> {
  if (!isUuid(id)) return undefined;
  const [current] = await sql<{ approval_status: ApprovalStatus }[]>`
    select approval_status from devices where id = ${id}::uuid`;
  if (!current) return undefined;
  if (current.approval_status !== "approved")
    throw new AppError(
      409,
      "invalid_transition",
      `Only an approved device can be revoked (it is ${current.approval_status})`,
    );
  return updateDevice(sql, id, { approvalStatus: "rejected" }, options);
}

/**
 * An operator's answer to the device's pending identity claim, bound to the claim they looked at: its
 * `fingerprint` (as the page showed it). `accept`: the claim's secret becomes the device's identity and the
 * old token stops working (a re-imaged or replaced device registers again and, if approved, gets a token).
 * `reject`: the claim and the count of refused registrations are forgotten; the device keeps its identity,
 * and the next claim can be recorded. `none`: nothing to decide; `changed`: the pending claim is not the
 * one with that fingerprint any more (decided meanwhile, or another one since), and nothing changed.
 */
export async function resolveIdentityConflict(
  sql: Sql,
  id: string,
  decision: "accept" | "reject",
  fingerprint: string,
): Promise<"resolved" | "none" | "changed"> {
  if (!isUuid(id)) return "none";
  const accept = decision === "accept";
  const prefix = fingerprint.replaceAll(":", "").toLowerCase();
  const claimed = sql`left(conflict_secret_hash, 16) = ${prefix}`;
  // Without a pending claim, rejecting dismisses the refused registrations' record.
  const [row] = await sql<{ resolved: boolean; pending: boolean; refused: boolean }[]>`
    with current as (
      select id, conflict_secret_hash is not null as pending, conflict_refused_count > 0 as refused
      from devices where id = ${id}::uuid),
    resolved as (
      update devices set
        secret_hash = case when ${accept} then conflict_secret_hash else secret_hash end,
        api_token_hash = case when ${accept} then null else api_token_hash end,
        claim_token_hash = case when ${accept} then null else claim_token_hash end,
        identity_conflict_at = null, conflict_secret_hash = null, conflict_address = null, conflict_last_at = null,
        conflict_refused_count = 0, conflict_refused_at = null, conflict_refused_address = null, updated_at = now()
      where id = ${id}::uuid and (
        (conflict_secret_hash is not null and ${prefix.length === 16} and ${claimed})
        or (not ${accept} and conflict_secret_hash is null and conflict_refused_count > 0 and ${prefix === ""}))
      returning id)
    select exists (select 1 from resolved) as resolved, current.pending, current.refused from current`;
  if (!row) return "none";
  if (row.resolved) return "resolved";
  return row.pending || (row.refused && prefix !== "") ? "changed" : "none";
}
