import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  customType,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uuid,
} from "drizzle-orm/pg-core";
import { devices } from "../devices/schema";

const bytea = customType<{ data: Buffer }>({ dataType: () => "bytea" });

/**
 * Browser terminal sessions. The opaque session ref the browser holds is random; only its SHA-256 is
 * stored (`ref_hash`). The ephemeral private key lives here encrypted (AES-256-GCM, key derived from
 * SECRET_KEY) from "Open terminal" until SSH connects or the session ends, never longer.
 */
export const terminalSessions = pgTable(
  "terminal_sessions",
  {
    id: uuid("id").primaryKey(),
    refHash: text("ref_hash").notNull().unique(),
    deviceId: uuid("device_id")
      .notNull()
      .references(() => devices.id, { onDelete: "cascade" }),
    /** The operator, or for a session opened with an API token (`outpost ssh`), the token's id. */
    operatorId: uuid("operator_id").notNull(),
    /** `operator` (the console) or `token` (an API token: `outpost ssh`); says what `operator_id` names. */
    principalKind: text("principal_kind").notNull().default("operator"),
    /** The operator's email when the session started (kept for the sessions list after they leave). */
    operatorEmail: text("operator_email").notNull(),
    /** The remote access lease this session opened (null: it used a lease the page already held). */
    ownedLeaseId: uuid("owned_lease_id"),
    /** The `ssh_authorize` command that installs the public key on the device. */
    commandId: uuid("command_id"),
    privateKey: bytea("private_key"),
    keyFingerprint: text("key_fingerprint").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().default(sql`now()`),
    /** A session ref can be joined until then (at most 60 minutes after creation). */
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    connectedAt: timestamp("connected_at", { withTimezone: true }),
    endedAt: timestamp("ended_at", { withTimezone: true }),
    /** exit | idle | max_duration | closed | operator_disabled | lease_ended | ended_by_operator | failed | expired */
    endReason: text("end_reason"),
    exitStatus: integer("exit_status"),
    /** Whether keyboard input is in the recording (an admin setting, fixed when the session starts). */
    recordsInput: boolean("records_input").notNull().default(false),
    /** Size of the recording: as played (asciicast text) and as stored (gzip). */
    recordingBytes: bigint("recording_bytes", { mode: "number" }).notNull().default(0),
    storedBytes: bigint("stored_bytes", { mode: "number" }).notNull().default(0),
  },
  (table) => [
    index("terminal_sessions_device_idx").on(table.deviceId, table.createdAt),
    index("terminal_sessions_created_idx").on(table.createdAt),
    index("terminal_sessions_open_idx").on(table.deviceId).where(sql`ended_at is null`),
  ],
);

/**
 * A session's recording as asciicast v2, in gzip chunks written while it runs (a crash loses at most
 * the last few seconds). Playback concatenates the chunks in `seq` order.
 */
export const terminalRecordingChunks = pgTable(
  "terminal_recording_chunks",
  {
    sessionId: uuid("session_id")
      .notNull()
      .references(() => terminalSessions.id, { onDelete: "cascade" }),
    seq: integer("seq").notNull(),
    data: bytea("data").notNull(),
  },
  (table) => [primaryKey({ columns: [table.sessionId, table.seq] })],
);

/**
 * The device sshd's host key, pinned the first time it is seen (heartbeat `ssh_host_key`, or the first
 * connection when the agent never reported one). A different key reported later is kept in `reported_*`
 * and refuses terminals until an admin accepts it.
 */
export const deviceHostKeys = pgTable("device_host_keys", {
  deviceId: uuid("device_id")
    .primaryKey()
    .references(() => devices.id, { onDelete: "cascade" }),
  publicKey: text("public_key").notNull(),
  fingerprint: text("fingerprint").notNull(),
  pinnedAt: timestamp("pinned_at", { withTimezone: true }).notNull().default(sql`now()`),
  pinnedBy: text("pinned_by").notNull(),
  reportedKey: text("reported_key"),
  reportedFingerprint: text("reported_fingerprint"),
  reportedAt: timestamp("reported_at", { withTimezone: true }),
});
