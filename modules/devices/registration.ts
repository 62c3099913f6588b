// Registration: the public call a device makes first, and again whenever its identity changes.
import { randomToken, sha256Hex } from "../platform/crypto";
import type { Sql } from "../platform/database";
import { badRequest } from "../platform/errors";
import { firstInvalidField } from "../platform/schemas";
import { registrationBody } from "./model";
import { type Device, type DeviceRow, deviceColumns, toDevice } from "./rows";
import {
  ipv4From,
  normaliseMac,
  PRODUCT_NAME_MAX,
  schemaHash,
  validateMetadata,
  validateSchemaDefinition,
} from "./validation";

const REGISTRATION_FIELDS = ["mac_address", "product_name", "metadata"];

/**
 * Checks a registration body (RegistrationBody, in the spec's field order): 400 invalid_request for
 * shape errors, then the metadata limits (400) and the schema's rules (422 invalid_schema_definition).
 */
export function parseRegistration(body: unknown) {
  if (!registrationBody.Check(body)) {
    const field = firstInvalidField(registrationBody, body, REGISTRATION_FIELDS);
    if (!field) throw badRequest("The request body must be a JSON object");
    const value = (body as Record<string, unknown>)[field];
    if (field === "mac_address") {
      if (value === undefined || value === null) throw badRequest("mac_address is required", { field });
      normaliseMac(value); // throws its own message: not a string, or not a MAC address
    }
    if (field === "product_name") {
      throw badRequest(`product_name must be a string of at most ${PRODUCT_NAME_MAX} characters`, { field });
    }
    throw badRequest("metadata must be a JSON object", { field });
  }
  const productName = body.product_name?.trim() || null;
  const metadata = body.metadata == null ? undefined : validateMetadata(body.metadata);
  const schema =
    body.schema_definition == null ? undefined : validateSchemaDefinition(body.schema_definition);
  return { macAddress: normaliseMac(body.mac_address), productName, metadata, schema };
}

/**
 * Registers a device or, for a known MAC, updates it (same id; approval status kept; product name,
 * metadata and schema replaced when given). An approved device gets a fresh API token in the same
 * statement that stores its hash: the token returned is always the one that is valid, whatever
 * approval or registration runs concurrently (the row lock of the upsert orders them).
 */
export async function registerDevice(
  sql: Sql,
  body: unknown,
  options: { onlineWindowSeconds: number },
): Promise<{ device: Device; apiToken: string | undefined; created: boolean }> {
  const input = parseRegistration(body);
  const token = randomToken(32);
  const tokenHash = sha256Hex(token);
  const schemaJson = input.schema ? JSON.stringify(input.schema) : null;
  const hash = input.schema ? schemaHash(input.schema) : null;
  const [row] = await sql<(DeviceRow & { created: boolean; token_issued: boolean })[]>`
    with upserted as (
      insert into devices as d (mac_address, product_name, metadata, schema, schema_hash, ipv4_address,
        last_registration_at)
      values (${input.macAddress}, ${input.productName}, ${JSON.stringify(input.metadata ?? {})}::jsonb,
        coalesce(${schemaJson}::jsonb, '{}'::jsonb), ${hash}, ${ipv4From(input.metadata)}, now())
      on conflict (mac_address) do update set
        product_name = coalesce(excluded.product_name, d.product_name),
        metadata = case when ${input.metadata !== undefined} then excluded.metadata else d.metadata end,
        ipv4_address = case when ${input.metadata !== undefined} then excluded.ipv4_address else d.ipv4_address end,
        schema = case when ${schemaJson !== null} then excluded.schema else d.schema end,
        schema_hash = case when ${schemaJson !== null} then excluded.schema_hash else d.schema_hash end,
        api_token_hash = case when d.approval_status = 'approved' then ${tokenHash} else d.api_token_hash end,
        token_issued_at = case when d.approval_status = 'approved' then now() else d.token_issued_at end,
        last_registration_at = now(),
        updated_at = now()
      returning d.*, (xmax = 0) as created
    )
    select ${deviceColumns(sql, options.onlineWindowSeconds)}, d.created,
      (d.approval_status = 'approved' and d.api_token_hash = ${tokenHash}) as token_issued
    from upserted d`;
  return { device: toDevice(row!), apiToken: row!.token_issued ? token : undefined, created: row!.created };
}
