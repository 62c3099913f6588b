import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { writeFileAtomic } from "../fs-atomic.ts";
import { CommandFailure, type CommandHandler, commandFields, positionalArgs } from "./types.ts";

export const ALLOWED_KEY_TYPES = [
  "ssh-ed25519",
  "ssh-rsa",
  "ecdsa-sha2-nistp256",
  "ecdsa-sha2-nistp384",
  "ecdsa-sha2-nistp521",
];
const SESSION_REF_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const COMMENT_PREFIX = "outpost-session:";
const DEFAULT_TTL_S = 300;

export interface ParsedPublicKey {
  type: string;
  blob: string;
  fingerprint: string;
}

/** Parse `<type> <base64> [comment]`: allowed type, decodable blob whose embedded type matches. */
export function parsePublicKey(raw: unknown): ParsedPublicKey {
  if (typeof raw !== "string" || raw.trim() === "") throw new CommandFailure("missing public_key");
  if (/[\r\n\0]/.test(raw.trim())) throw new CommandFailure("public_key must be a single line");
  const [type, blob] = raw.trim().split(/\s+/);
  if (!ALLOWED_KEY_TYPES.includes(type)) {
    throw new CommandFailure(`unsupported key type "${type}" (allowed: ${ALLOWED_KEY_TYPES.join(", ")})`);
  }
  if (!blob || !/^[A-Za-z0-9+/]+={0,2}$/.test(blob))
    throw new CommandFailure("public_key blob is not base64");
  const bytes = Buffer.from(blob, "base64");
  const len = bytes.length >= 4 ? bytes.readUInt32BE(0) : -1;
  const embedded =
    len > 0 && len < 64 && bytes.length >= 4 + len ? bytes.subarray(4, 4 + len).toString("latin1") : null;
  if (embedded !== type) throw new CommandFailure("public_key blob does not match its key type");
  const fingerprint = `SHA256:${createHash("sha256").update(bytes).digest("base64").replace(/=+$/, "")}`;
  return { type, blob, fingerprint };
}

/** OpenSSH `expiry-time` value in UTC: `YYYYMMDDHHMMSSZ`. */
export function formatExpiry(date: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${p(date.getUTCFullYear(), 4)}${p(date.getUTCMonth() + 1)}${p(date.getUTCDate())}${p(date.getUTCHours())}${p(date.getUTCMinutes())}${p(date.getUTCSeconds())}Z`;
}

function parseExpiry(value: string): Date | null {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  return m ? new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6])) : null;
}

function sessionRefOf(line: string): string | null {
  const m = new RegExp(`\\s${COMMENT_PREFIX}(\\S+)\\s*$`).exec(line);
  return m ? m[1] : null;
}

function readLines(file: string): string[] {
  try {
    return fs
      .readFileSync(file, "utf8")
      .split("\n")
      .filter((l) => l.trim() !== "");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw new CommandFailure(`cannot read ${file}: ${(err as Error).message}`);
  }
}

/** Owner of the file if it exists, else of its directory (keeps a support user's ownership when root writes). */
function ownerFor(file: string): { uid: number; gid: number } | undefined {
  for (const p of [file, path.dirname(file)]) {
    try {
      const st = fs.statSync(p);
      return { uid: st.uid, gid: st.gid };
    } catch {
      // try the next candidate
    }
  }
  return undefined;
}

function writeKeys(file: string, lines: string[]) {
  const owner = ownerFor(file);
  writeFileAtomic(file, lines.length ? `${lines.join("\n")}\n` : "", { mode: 0o600, dirMode: 0o700, owner });
}

/** Session ref: `session_ref`, else `payload.name`, else `args[0]`; for ssh_authorize finally the command id. */
function readSessionRef(fields: Record<string, unknown>, fallback?: unknown): string {
  const ref = fields.session_ref ?? fields.name ?? fallback;
  if (typeof ref !== "string" || !SESSION_REF_RE.test(ref))
    throw new CommandFailure("missing or invalid session_ref");
  return ref;
}

/** Drop agent-managed lines whose expiry has passed (other lines are never touched). */
function pruneExpired(lines: string[], now: Date): string[] {
  return lines.filter((line) => {
    if (!sessionRefOf(line)) return true;
    const m = /expiry-time="([^"]+)"/.exec(line);
    const expiry = m ? parseExpiry(m[1]) : null;
    return !expiry || expiry > now;
  });
}

/**
 * `ssh_authorize`: add `expiry-time="…Z",restrict,pty <type> <blob> outpost-session:<ref>` to the
 * configured authorized_keys (atomic write, 0600). Fields: `public_key`, `session_ref` (default: the
 * command id), `ttl_seconds` (default 300, capped by `ssh_max_ttl_s`) from args, payload or the command.
 * `target_user`, when given, must be the configured support user (`ssh_target_user`), as in the reference
 * (else FAILED `unsupported target_user`). Re-authorizing a session replaces its key.
 * Output `{mode: "dynamic_ssh_authorize", target_user, session_ref, expires_at, fingerprint, path}`.
 */
export const sshAuthorize: CommandHandler = async (command, ctx) => {
  const fields = commandFields(command);
  const targetUser = fields.target_user ?? ctx.config.ssh_target_user;
  if (targetUser !== ctx.config.ssh_target_user)
    throw new CommandFailure(
      `unsupported target_user ${JSON.stringify(targetUser).slice(0, 80)} (this device authorizes keys for ${ctx.config.ssh_target_user} only)`,
    );
  const key = parsePublicKey(fields.public_key ?? fields.key);
  const sessionRef = readSessionRef(fields, command.command_id);
  const rawTtl = fields.ttl_seconds ?? DEFAULT_TTL_S;
  const ttl = typeof rawTtl === "string" ? Number(rawTtl) : rawTtl;
  if (typeof ttl !== "number" || !Number.isInteger(ttl) || ttl <= 0)
    throw new CommandFailure("ttl_seconds must be a positive integer");
  if (ttl > ctx.config.ssh_max_ttl_s)
    throw new CommandFailure(`ttl_seconds must be at most ${ctx.config.ssh_max_ttl_s}`);
  const now = new Date();
  const expiresAt = new Date(Math.floor(now.getTime() / 1000) * 1000 + ttl * 1000);
  const file = ctx.config.authorized_keys_path;
  const kept = pruneExpired(readLines(file), now).filter((l) => sessionRefOf(l) !== sessionRef);
  kept.push(
    `expiry-time="${formatExpiry(expiresAt)}",restrict,pty ${key.type} ${key.blob} ${COMMENT_PREFIX}${sessionRef}`,
  );
  writeKeys(file, kept);
  return {
    mode: "dynamic_ssh_authorize",
    target_user: targetUser,
    path: file,
    session_ref: sessionRef,
    expires_at: expiresAt.toISOString(),
    fingerprint: key.fingerprint,
  };
};

/**
 * `ssh_revoke`: remove the key(s) of a session ref (`session_ref`, `payload.name` or `args[0]`). Unknown ref → OK,
 * `revoked: 0`. Output `{mode: "dynamic_ssh_revoke", session_ref, revoked, path}`.
 */
export const sshRevoke: CommandHandler = async (command, ctx) => {
  const sessionRef = readSessionRef(commandFields(command), positionalArgs(command)[0]);
  const file = ctx.config.authorized_keys_path;
  const lines = readLines(file);
  const kept = lines.filter((l) => sessionRefOf(l) !== sessionRef);
  const revoked = lines.length - kept.length;
  if (revoked > 0 || fs.existsSync(file)) writeKeys(file, pruneExpired(kept, new Date()));
  return { mode: "dynamic_ssh_revoke", path: file, session_ref: sessionRef, revoked };
};
