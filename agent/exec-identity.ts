import fs from "node:fs";

/**
 * The user and group `exec_cmd` runs commands as (`exec_user` / `exec_group`).
 *
 * Default: when the agent runs as root and neither key is set, commands run as `nobody` (its primary group,
 * normally `nogroup`; uid/gid 65534 when the system has no `nobody` entry). Running them as root needs an
 * explicit `exec_user: root`. When the agent does not run as root, commands run as the agent's own user,
 * and configuring another user or group is refused at exec time (only root can switch).
 *
 * Names are looked up in /etc/passwd and /etc/group only (no NSS, LDAP, …); numeric ids are accepted as
 * they are.
 */
export interface ExecIdentity {
  uid: number;
  gid: number;
  /** The user name, or the number when /etc/passwd has no entry for it. */
  user: string;
  /** The group name, or the number when /etc/group has no entry for it. */
  group: string;
}

export class ExecIdentityError extends Error {
  override name = "ExecIdentityError";
}

export interface IdentityFiles {
  passwdFile?: string;
  groupFile?: string;
}

/** The uid and gid the agent process runs as. */
export interface ProcessIds {
  uid: number;
  gid: number;
}

/** The agent's own ids, or null where the platform has none. */
export function currentProcessIds(): ProcessIds | null {
  if (typeof process.getuid !== "function" || typeof process.getgid !== "function") return null;
  return { uid: process.getuid(), gid: process.getgid() };
}

/** The conventional overflow id of `nobody` / `nogroup`, used when the system has no `nobody` entry. */
export const NOBODY_ID = 65534;
const MAX_ID = 4294967294; // (uid_t)-1 is "no change" for setuid/setgid, never a real id

interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
}

interface GroupEntry {
  name: string;
  gid: number;
}

function readDatabase(file: string): string[][] {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    throw new ExecIdentityError(`cannot read ${file}: ${(err as Error).message}`);
  }
  return text
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.startsWith("#"))
    .map((line) => line.split(":"));
}

function passwdEntries(file: string): PasswdEntry[] {
  return readDatabase(file)
    .filter((f) => f.length >= 4 && /^\d+$/.test(f[2]) && /^\d+$/.test(f[3]))
    .map((f) => ({ name: f[0], uid: Number(f[2]), gid: Number(f[3]) }));
}

function groupEntries(file: string): GroupEntry[] {
  return readDatabase(file)
    .filter((f) => f.length >= 3 && /^\d+$/.test(f[2]))
    .map((f) => ({ name: f[0], gid: Number(f[2]) }));
}

/** Entries for a default or a display name only: an unreadable file then just means "no entry". */
function optional<T>(read: () => T[]): T[] {
  try {
    return read();
  } catch {
    return [];
  }
}

function numericId(value: string): number | null {
  if (!/^\d{1,10}$/.test(value)) return null;
  const n = Number(value);
  return n <= MAX_ID ? n : null;
}

/** A user or group by name, else a number that is no name; unknown: ExecIdentityError naming the key. */
function lookUp<Entry extends { name: string }>(
  entries: Entry[],
  idOf: (entry: Entry) => number,
  value: string,
  key: "exec_user" | "exec_group",
  what: "user" | "group",
  file: string,
): { id: number; byName: Entry | undefined } {
  const byName = entries.find((e) => e.name === value);
  const id = byName ? idOf(byName) : numericId(value);
  if (id === null) {
    throw new ExecIdentityError(
      `${key}: unknown ${what} "${value}" (not in ${file} and not a numeric ${what === "user" ? "uid" : "gid"})`,
    );
  }
  return { id, byName };
}

/**
 * Resolve `exec_user` / `exec_group` to ids. Returns null when commands run as the agent itself without
 * switching (not root and nothing configured). Throws ExecIdentityError naming the key for an unknown
 * user or group. A name is looked up first; a string of digits that is no name is taken as a numeric id.
 */
export function resolveExecIdentity(
  user: string | null,
  group: string | null,
  ids: ProcessIds | null = currentProcessIds(),
  files: IdentityFiles = {},
): ExecIdentity | null {
  const passwdFile = files.passwdFile ?? "/etc/passwd";
  const groupFile = files.groupFile ?? "/etc/group";
  if (user === null && group === null && ids?.uid !== 0) return null;

  let identity: { uid: number; gid: number | null; user: string };
  if (user === null) {
    if (ids === null) throw new ExecIdentityError("exec_group: needs exec_user on this platform");
    if (ids.uid === 0) {
      const nobody = optional(() => passwdEntries(passwdFile)).find((e) => e.name === "nobody");
      identity = nobody
        ? { uid: nobody.uid, gid: nobody.gid, user: nobody.name }
        : { uid: NOBODY_ID, gid: NOBODY_ID, user: "nobody" };
    } else {
      const self = optional(() => passwdEntries(passwdFile)).find((e) => e.uid === ids.uid);
      identity = { uid: ids.uid, gid: ids.gid, user: self?.name ?? String(ids.uid) };
    }
  } else {
    const entries = passwdEntries(passwdFile);
    const { id: uid, byName } = lookUp(entries, (e) => e.uid, user, "exec_user", "user", passwdFile);
    const entry = byName ?? entries.find((e) => e.uid === uid);
    identity = { uid, gid: entry?.gid ?? null, user: entry?.name ?? String(uid) };
  }

  let gid: number;
  let groupName: string | null = null;
  if (group !== null) {
    const found = lookUp(groupEntries(groupFile), (e) => e.gid, group, "exec_group", "group", groupFile);
    gid = found.id;
    groupName = found.byName?.name ?? null;
  } else if (identity.gid !== null) {
    gid = identity.gid;
  } else {
    throw new ExecIdentityError(
      `exec_user: uid ${identity.uid} has no entry in ${passwdFile}, so it has no primary group: set exec_group too`,
    );
  }
  groupName ??= optional(() => groupEntries(groupFile)).find((e) => e.gid === gid)?.name ?? String(gid);
  return { uid: identity.uid, gid, user: identity.user, group: groupName };
}

/** `nobody (uid 65534, gid 65534 nogroup)` for messages and logs. */
export function describeIdentity(identity: ExecIdentity): string {
  return `${identity.user} (uid ${identity.uid}, gid ${identity.gid} ${identity.group})`;
}

/**
 * The `uid`/`gid` spawn options for executed commands, or null to spawn without switching. As root the
 * ids are always passed: the child then gets them and no supplementary groups (Bun clears them when uid
 * and gid are given; tests/agent/exec-identity.test.ts checks it). Not as root, an identity other than the agent's own is refused: only
 * root can switch, and running the command as the agent's user instead would silently ignore the setting.
 */
export function spawnIdentity(
  identity: ExecIdentity | null,
  ids: ProcessIds | null = currentProcessIds(),
): { uid: number; gid: number } | null {
  if (identity === null) return null;
  if (ids === null) {
    throw new ExecIdentityError(
      `cannot run commands as ${describeIdentity(identity)}: this platform cannot switch users`,
    );
  }
  if (ids.uid === 0) return { uid: identity.uid, gid: identity.gid };
  if (identity.uid === ids.uid && identity.gid === ids.gid) return null;
  throw new ExecIdentityError(
    `cannot run commands as ${describeIdentity(identity)}: the agent runs as uid ${ids.uid} (gid ${ids.gid}), ` +
      "not root, and cannot switch users; unset exec_user/exec_group or run the agent as root",
  );
}
