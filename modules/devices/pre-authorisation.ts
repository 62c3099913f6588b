// Pre-authorisation: an operator adds a device by MAC before it ever registers, bound to a claim token.

import { newEnrolmentSecret } from "../enrolment/service";
import { sha256Hex } from "../platform/crypto";
import type { Sql } from "../platform/database";
import { AppError, badRequest } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import type { ApprovalStatus } from "./rows";
import { DEVICE_NAME_MAX, normaliseMac, PRODUCT_NAME_MAX } from "./validation";

export interface PreRegistration {
  macAddress: unknown;
  productName?: unknown;
  name?: unknown;
  approved: boolean;
}

/**
 * Pre-registers a device by MAC before it ever contacts the server (pre-authorisation). A MAC is no
 * secret, so the entry is bound to a claim token, returned once: the registration that presents it
 * (as `enrolment_token`) claims the entry and, when it was pre-approved, gets its API token at once;
 * any other registration of the MAC is an identity conflict. 409 `device_exists` when the MAC is known.
 */
export async function preRegisterDevice(
  sql: Sql,
  input: PreRegistration,
): Promise<{ id: string; macAddress: string; claimToken: string }> {
  const macAddress = normaliseMac(input.macAddress);
  const product =
    typeof input.productName === "string" && input.productName.trim() !== ""
      ? input.productName.trim()
      : null;
  if (product && product.length > PRODUCT_NAME_MAX) {
    throw badRequest(`The product name must be at most ${PRODUCT_NAME_MAX} characters`, {
      field: "product_name",
    });
  }
  const name = typeof input.name === "string" && input.name.trim() !== "" ? input.name.trim() : null;
  if (name && name.length > DEVICE_NAME_MAX)
    throw badRequest(`The name must be at most ${DEVICE_NAME_MAX} characters`, { field: "name" });
  const status: ApprovalStatus = input.approved ? "approved" : "pending";
  // A MAC is no secret: the device claims this entry by presenting this token (docs/device-api.md).
  const claimToken = newEnrolmentSecret();
  const [row] = await sql<{ id: string }[]>`
    insert into devices (mac_address, product_name, approval_status, claim_token_hash, approval_changed_at, metadata)
    values (${macAddress}, ${product}, ${status}::device_approval_status, ${sha256Hex(claimToken)},
      ${input.approved ? sql`now()` : sql`null`}, ${JSON.stringify(name ? { name, pre_registered: true } : { pre_registered: true })}::jsonb)
    on conflict (mac_address) do nothing
    returning id`;
  if (!row) {
    throw new AppError(
      409,
      "device_exists",
      `A device with MAC address ${macAddress} is already registered`,
      {
        field: "mac_address",
      },
    );
  }
  return { id: row.id, macAddress, claimToken };
}

/**
 * A new claim token for a pre-authorised device that has not registered with its token yet (the operator
 * lost the one shown when it was added): the old token stops working in the same statement. Returned once;
 * only its SHA-256 is stored. 409 `device_claimed` once the device has claimed its entry (its secret
 * decides from then on), 404 for an unknown device.
 */
export async function reissueClaimToken(sql: Sql, id: string): Promise<string> {
  const claimToken = newEnrolmentSecret();
  // The update re-checks claim_token_hash under the row lock: a registration that claims the entry
  // meanwhile wins, and no token is handed out that would not work.
  const [row] = isUuid(id)
    ? await sql<{ known: boolean; reissued: boolean }[]>`
        with reissued as (
          update devices set claim_token_hash = ${sha256Hex(claimToken)}, updated_at = now()
          where id = ${id}::uuid and claim_token_hash is not null
          returning id)
        select exists (select 1 from devices where id = ${id}::uuid) as known,
          exists (select 1 from reissued) as reissued`
    : [];
  if (!row?.known)
    throw new AppError(404, "device_not_found", "This device does not exist, or it was deleted.");
  if (!row.reissued) {
    throw new AppError(
      409,
      "device_claimed",
      "This device has already registered with its claim token; its own secret identifies it now",
    );
  }
  return claimToken;
}
