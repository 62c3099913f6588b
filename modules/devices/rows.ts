/**
 * How a `devices` row becomes a Device, in one place: the columns every read selects and the one
 * mapper from SQL rows (the list pages read a summary, the detail and the API the whole device).
 */
import { fingerprintOfSecretHash } from "../../shared/secret-fingerprint";
import type { Sql } from "../platform/database";
import { schemaVersionOf } from "./telemetry-schemas";

export const APPROVAL_STATUSES = ["pending", "approved", "rejected"] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

/** What a device list shows (console list, dashboard). */
export interface DeviceSummary {
  id: string;
  macAddress: string;
  /** Reported name (metadata.name), else derived from the MAC like the agent does. */
  name: string;
  productName: string | null;
  approvalStatus: ApprovalStatus;
  ipv4Address: string | null;
  lastSeenAt: Date | null;
  /** Last registration attempt (how a pending device shows it is still there). */
  lastRegistrationAt: Date | null;
  /** Seen within the online window (computed at read time, never stored). */
  online: boolean;
  /** When a registration of this MAC could not prove it is this device (an operator decides). */
  identityConflictAt: Date | null;
  createdAt: Date;
}

export interface Device extends DeviceSummary {
  metadata: Record<string, unknown>;
  /** The labels its agent declares (not editable in the console). */
  labels: Record<string, string>;
  /** Operators' name for it (null: `name` is the reported or MAC-derived one). */
  displayName: string | null;
  notes: string | null;
  /** The telemetry schema last announced ({} when none). */
  schema: Record<string, unknown>;
  /** `schema.version`, "v1" when the schema has none; null without a schema. */
  schemaVersion: string | null;
  remoteAccessRequested: boolean;
  hasApiToken: boolean;
  /** The device holds a secret proving its identity (bound at its first registration). */
  hasSecret: boolean;
  /** Where the pending identity claim first came from. */
  conflictAddress: string | null;
  /** The pending claim's secret fingerprint (`ab12:cd34:ef56:7890`), as `outpost-agent status` prints it. */
  conflictFingerprint: string | null;
  /** The pending claim's latest registration. */
  conflictLastAt: Date | null;
  /** Registrations refused while the claim was pending: how many, the latest's time and address. */
  conflictRefused: { count: number; at: Date | null; address: string | null };
  /** Pre-authorised by an operator and not claimed yet: waits for a registration with its claim token. */
  awaitingClaim: boolean;
  approvalChangedAt: Date | null;
  updatedAt: Date;
}

export type DeviceSummaryRow = {
  id: string;
  mac_address: string;
  name: string;
  product_name: string | null;
  approval_status: ApprovalStatus;
  ipv4_address: string | null;
  last_seen_at: Date | null;
  last_registration_at: Date | null;
  identity_conflict_at: Date | null;
  online: boolean;
  created_at: Date;
};

export type DeviceRow = DeviceSummaryRow & {
  metadata: Record<string, unknown>;
  labels: Record<string, string>;
  display_name: string | null;
  notes: string | null;
  schema: Record<string, unknown>;
  remote_access_requested: boolean;
  has_api_token: boolean;
  has_secret: boolean;
  conflict_address: string | null;
  conflict_hash_prefix: string | null;
  conflict_last_at: Date | null;
  conflict_refused_count: number;
  conflict_refused_at: Date | null;
  conflict_refused_address: string | null;
  awaiting_claim: boolean;
  approval_changed_at: Date | null;
  updated_at: Date;
};

export function toDeviceSummary(row: DeviceSummaryRow): DeviceSummary {
  return {
    id: row.id,
    macAddress: row.mac_address,
    name: row.name,
    productName: row.product_name,
    approvalStatus: row.approval_status,
    ipv4Address: row.ipv4_address,
    lastSeenAt: row.last_seen_at,
    lastRegistrationAt: row.last_registration_at,
    online: row.online,
    identityConflictAt: row.identity_conflict_at,
    createdAt: row.created_at,
  };
}

export function toDevice(row: DeviceRow): Device {
  return {
    ...toDeviceSummary(row),
    metadata: row.metadata,
    labels: row.labels,
    displayName: row.display_name,
    notes: row.notes,
    schema: row.schema,
    schemaVersion: schemaVersionOf(row.schema),
    remoteAccessRequested: row.remote_access_requested,
    hasApiToken: row.has_api_token,
    hasSecret: row.has_secret,
    conflictAddress: row.conflict_address,
    conflictFingerprint: row.conflict_hash_prefix && fingerprintOfSecretHash(row.conflict_hash_prefix),
    conflictLastAt: row.conflict_last_at,
    conflictRefused: {
      count: row.conflict_refused_count,
      at: row.conflict_refused_at,
      address: row.conflict_refused_address,
    },
    awaitingClaim: row.awaiting_claim,
    approvalChangedAt: row.approval_changed_at,
    updatedAt: row.updated_at,
  };
}

/**
 * The name a device is shown and sorted by: operators' display name, else device_display_name (the
 * reported name, else derived from the MAC). Indexed with the id for the name sort (docs/fleet.md).
 */
export const DEVICE_NAME_SQL = "coalesce(d.display_name, device_display_name(d.metadata, d.mac_address))";

/** Columns of a DeviceSummary, for a `devices d` row; `online` needs the window in seconds. */
export function summaryColumns(sql: Sql, onlineWindowSeconds: number) {
  return sql`d.id, d.mac_address, ${sql.unsafe(DEVICE_NAME_SQL)} as name, d.product_name,
    d.approval_status, d.ipv4_address, d.last_seen_at, d.last_registration_at, d.identity_conflict_at,
    coalesce(d.last_seen_at >= now() - make_interval(secs => ${onlineWindowSeconds}), false) as online, d.created_at`;
}

/** Columns of a Device, for a `devices d` row (its schema looked up by hash: a page of devices' worth). */
export function deviceColumns(sql: Sql, onlineWindowSeconds: number) {
  return sql`${summaryColumns(sql, onlineWindowSeconds)}, d.metadata, d.labels, d.display_name, d.notes,
    coalesce((select s.schema from telemetry_schemas s where s.hash = d.schema_hash), '{}'::jsonb) as schema,
    d.remote_access_requested, d.api_token_hash is not null as has_api_token,
    d.secret_hash is not null as has_secret, d.conflict_address,
    left(d.conflict_secret_hash, 16) as conflict_hash_prefix, d.conflict_last_at, d.conflict_refused_count,
    d.conflict_refused_at, d.conflict_refused_address, d.claim_token_hash is not null as awaiting_claim, d.approval_changed_at, d.updated_at`;
}
