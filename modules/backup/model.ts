import { type Static, Type } from "@sinclair/typebox";
import { compileSchema } from "../platform/schemas";

/** Bumped when an archive's layout changes in a way older restores cannot read. */
export const ARCHIVE_FORMAT_VERSION = 1;
export const MANIFEST_ENTRY = "manifest.json";

const Sha256 = Type.String({ pattern: "^[0-9a-f]{64}$" });

export const ArchiveFile = Type.Object({
  path: Type.String({ minLength: 1 }),
  bytes: Type.Integer({ minimum: 0 }),
  sha256: Sha256,
});

/** One table of Outpost's schema as dumped: its columns in COPY order and the archive entries holding its rows. */
export const ArchiveTable = Type.Object({
  name: Type.String({ minLength: 1 }),
  columns: Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
  rows: Type.Integer({ minimum: 0 }),
  parts: Type.Array(Type.String()),
  /** A table partitioned by UTC day: its key column and the days that had a partition. */
  partitions: Type.Optional(
    Type.Object({
      key: Type.String({ minLength: 1 }),
      days: Type.Array(Type.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}$" })),
    }),
  ),
});

export const Manifest = Type.Object({
  format: Type.Literal("outpost-backup"),
  format_version: Type.Integer({ minimum: 1 }),
  created_at: Type.String(),
  outpost_version: Type.String(),
  postgres_version: Type.String(),
  /** The database's migration level: how many migrations were applied, and the last one's journal time. */
  migration: Type.Object({
    count: Type.Integer({ minimum: 1 }),
    last_at: Type.Integer({ minimum: 0 }),
    last_tag: Type.Union([Type.String(), Type.Null()]),
  }),
  telemetry: Type.Boolean(),
  tables: Type.Array(ArchiveTable),
  sequences: Type.Array(
    Type.Object({
      name: Type.String({ minLength: 1 }),
      last_value: Type.String(),
      is_called: Type.Boolean(),
    }),
  ),
  /** Which of DATA_DIR's keys the archive holds (`data/<name>`), and where the others came from. */
  keys: Type.Record(Type.String(), Type.Union([Type.Literal("archive"), Type.Literal("environment")])),
  /** Every entry but the manifest itself, in archive order. */
  files: Type.Array(ArchiveFile),
});

export type Manifest = Static<typeof Manifest>;
export type ArchiveTable = Static<typeof ArchiveTable>;
export type ArchiveFile = Static<typeof ArchiveFile>;
export const manifestCheck = compileSchema(Manifest);

/** DATA_DIR's files that identify the server to agents and sign its tokens, and the variables that replace them. */
export const KEY_FILES = { secret_key: "SECRET_KEY", tunnel_host_key: "TUNNEL_HOST_KEY" } as const;
export type KeyFile = keyof typeof KEY_FILES;

/** Why a restore (or reading an archive) refused: each refusal has its own code and one clear line. */
export type BackupRefusal =
  | "not_a_backup"
  | "corrupt"
  | "newer_version"
  | "unknown_version"
  | "not_empty"
  | "running"
  | "failed"
  | "missing_key";

export class BackupError extends Error {
  override name = "BackupError";
  constructor(
    readonly code: BackupRefusal,
    message: string,
  ) {
    super(message);
  }
}
