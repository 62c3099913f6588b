// Registration: the public call a device makes first, and again whenever its identity changes.

import { claimEnrolment } from "../enrolment/service";
import { randomToken, sha256Hex } from "../platform/crypto";
import type { Sql } from "../platform/database";
import { AppError } from "../platform/errors";
import { compileSchema } from "../platform/schemas";
import { assertValidBody } from "../platform/validation";
import { RegistrationBody } from "./model";
import { type Device, type DeviceRow, deviceColumns, toDevice } from "./rows";
import { storeTelemetrySchemas } from "./telemetry-schemas";
import { announcedSchema, ipv4From, normaliseMac, validateLabels, validateMetadata } from "./validation";

const registrationBody = compileSchema(RegistrationBody);

/**
 * Checks a registration body (RegistrationBody, in the spec's field order; the route has checked it
 * already, other callers have not): 400 invalid_request for shape errors, then the metadata limits
 * (400) and the schema's rules (422 invalid_schema_definition).
 */
export function parseRegistration(body: unknown) {
  assertValidBody(registrationBody, body);
  const productName = body.product_name?.trim() || null;
  const metadata = body.metadata == null ? undefined : validateMetadata(body.metadata);
  const labels = body.labels === undefined ? undefined : validateLabels(body.labels);
  const schema = body.schema_definition == null ? undefined : announcedSchema(body.schema_definition);
  return {
    macAddress: normaliseMac(body.mac_address),
    productName,
    metadata,
    labels,
    schema,
    deviceSecret: body.device_secret,
    apiToken: body.api_token,
    enrolmentToken: body.enrolment_token,
  };
}

/** A registration of a known MAC address that could not prove it is that device. */
export const identityConflict = () =>
  new AppError(
    409,
    "identity_conflict",
    "A device with this MAC address is registered with another identity: an operator must accept this one on the device's page",
    { field: "device_secret" },
  );

/**
 * A registration that could not prove it is the device becomes its pending identity claim when it presents
 * a secret and none is pending (or is that claim asking again); anything else is refused and counted:
 * a later claim never replaces the pending one, so the operator accepts exactly the claim the page showed
 * (docs/device-api.md, _Device identity_). Always throws 409: `identity_conflict` for the pending claim,
 * `identity_conflict_pending` for a refused one.
 */
async function recordIdentityClaim(
  sql: Sql,
  macAddress: string,
  secretHash: string | null,
  address: string | undefined,
): Promise<never> {
  // The row lock orders concurrent claims: the first to take it becomes the pending one.
  const [row] = await sql<{ pending_claim: boolean; other_pending: boolean }[]>`
    with claim as (
      select id, (identity_conflict_at is null and ${secretHash}::text is not null) as opens,
        coalesce(conflict_secret_hash = ${secretHash}, false) as repeats
      from devices where mac_address = ${macAddress} for update)
    update devices d set
      last_registration_at = now(),
      identity_conflict_at = case when claim.opens then now() else d.identity_conflict_at end,
      conflict_secret_hash = case when claim.opens then ${secretHash} else d.conflict_secret_hash end,
      conflict_address = case when claim.opens then ${address ?? null} else d.conflict_address end,
      conflict_last_at = case when claim.opens or claim.repeats then now() else d.conflict_last_at end,
      conflict_refused_count = d.conflict_refused_count + case when claim.opens or claim.repeats then 0 else 1 end,
      conflict_refused_at = case when claim.opens or claim.repeats then d.conflict_refused_at else now() end,
      conflict_refused_address = case when claim.opens or claim.repeats then d.conflict_refused_address
        else ${address ?? null} end
    from claim where d.id = claim.id
    returning claim.opens or claim.repeats as pending_claim, d.identity_conflict_at is not null as other_pending`;
  if (!row?.other_pending || row.pending_claim) throw identityConflict();
  throw new AppError(
    409,
    "identity_conflict_pending",
    "Another registration of this MAC address is already waiting for an operator's decision; this one was refused and recorded. Register again once an operator has decided",
    { field: "device_secret" },
  );
}

/**
 * Registers a device or, for a known MAC, updates it (same id; approval status kept; product name,
 * metadata and schema replaced when given). An approved device gets a fresh API token in the same
 * statement that stores its hash: the token returned is always the one that is valid, whatever
 * approval or registration runs concurrently (the row lock of the upsert orders them).
 *
 * Identity: a known MAC is updated only by a registration that proves it is that device — its
 * secret (`device_secret`, bound at its first registration), or, for a device registered before it
 * had one, the token it holds (`api_token`; the secret is bound then). A device pre-authorised by an
 * operator is claimed only with the claim token the operator got (`enrolment_token`). No secret is
 * bound on a MAC alone: a device from before secrets that holds no token (pending, or approved since)
 * takes one through an operator accepting the conflict. A registration without a secret may still
 * update such a device while it is not approved (it proves nothing, and gets nothing). Anything else
 * changes nothing but the conflict record, and answers 409 identity_conflict.
 */
export async function registerDevice(
  sql: Sql,
  body: unknown,
  options: { onlineWindowSeconds: number; address?: string },
): Promise<{ device: Device; apiToken: string | undefined; created: boolean }> {
  const input = parseRegistration(body);
  const token = randomToken(32);
  const tokenHash = sha256Hex(token);
  const secretHash = input.deviceSecret === undefined ? null : sha256Hex(input.deviceSecret);
  const proofHash = input.apiToken === undefined ? null : sha256Hex(input.apiToken);
  const claimHash = input.enrolmentToken === undefined ? null : sha256Hex(input.enrolmentToken);
  const hash = input.schema?.hash ?? null;
  // With an enrolment token: one transaction that locks the token, so concurrent registrations never
  // use it more often than it allows; a new device is created approved (with its token) or pending.
  const upsert = async (tx: Sql) => {
    // The token matters only to a registration that would create a device: a known device keeps
    // registering with it in its configuration long after the token expired or was used up.
    const known = input.enrolmentToken
      ? (await tx`select 1 from devices where mac_address = ${input.macAddress}`).length > 0
      : true;
    const enrolment = known ? undefined : await claimEnrolment(tx, input.enrolmentToken!, input.productName);
    const approveNew = enrolment?.approve === true;
    if (input.schema) await storeTelemetrySchemas(tx, [input.schema]);
    const [row] = await tx<(DeviceRow & { created: boolean; token_issued: boolean })[]>`
    with upserted as (
      insert into devices as d (mac_address, product_name, metadata, labels, schema_hash, ipv4_address,
        last_registration_at, secret_hash, approval_status, api_token_hash, token_issued_at)
      values (${input.macAddress}, ${input.productName}, ${JSON.stringify(input.metadata ?? {})}::jsonb,
        ${JSON.stringify(input.labels ?? {})}::jsonb, ${hash}, ${ipv4From(input.metadata)}, now(), ${secretHash},
        ${approveNew ? "approved" : "pending"}::device_approval_status, ${approveNew ? tokenHash : null},
        case when ${approveNew} then now() end)
      on conflict (mac_address) do update set
        product_name = coalesce(excluded.product_name, d.product_name),
        metadata = case when ${input.metadata !== undefined} then excluded.metadata else d.metadata end,
        ipv4_address = case when ${input.metadata !== undefined} then excluded.ipv4_address else d.ipv4_address end,
        labels = case when ${input.labels !== undefined} then excluded.labels else d.labels end,
        schema_hash = coalesce(excluded.schema_hash, d.schema_hash),
        api_token_hash = case when d.approval_status = 'approved' then ${tokenHash} else d.api_token_hash end,
        token_issued_at = case when d.approval_status = 'approved' then now() else d.token_issued_at end,
        secret_hash = coalesce(d.secret_hash, excluded.secret_hash),
        claim_token_hash = null,
        -- A pending claim made with the secret this registration proves (say, before its claim token was
        -- configured) is this device's own: nothing is left to decide.
        identity_conflict_at = case when d.conflict_secret_hash = ${secretHash} then null else d.identity_conflict_at end,
        conflict_address = case when d.conflict_secret_hash = ${secretHash} then null else d.conflict_address end,
        conflict_last_at = case when d.conflict_secret_hash = ${secretHash} then null else d.conflict_last_at end,
        conflict_secret_hash = case when d.conflict_secret_hash = ${secretHash} then null else d.conflict_secret_hash end,
        last_registration_at = now(),
        updated_at = now()
      where d.secret_hash = ${secretHash}
        or (d.secret_hash is null and d.api_token_hash = ${proofHash})
        or (d.secret_hash is null and d.api_token_hash is null and d.claim_token_hash = ${claimHash})
        or (d.secret_hash is null and d.api_token_hash is null and d.claim_token_hash is null
          and d.approval_status <> 'approved' and ${secretHash}::text is null)
      returning d.*, (xmax = 0) as created
    )
    select ${deviceColumns(tx, options.onlineWindowSeconds)}, d.created,
      (d.approval_status = 'approved' and d.api_token_hash = ${tokenHash}) as token_issued
    from upserted d`;
    if (row?.created) await enrolment?.use();
    return row;
  };
  const row = input.enrolmentToken
    ? await sql.begin((tx) => upsert(tx as unknown as Sql))
    : await upsert(sql);
  if (!row) {
    await recordIdentityClaim(sql, input.macAddress, secretHash, options.address);
  }
  return { device: toDevice(row), apiToken: row.token_issued ? token : undefined, created: row.created };
}
