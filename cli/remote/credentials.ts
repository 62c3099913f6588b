import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";

/** Where an operator's terminal reaches Outpost: the console's address and an API token. */
export interface Credentials {
  url: string;
  token: string;
}

/** A problem the operator can fix (bad address, no token): one line, exit 2. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
    this.name = "CliError";
  }
}

/** `$XDG_CONFIG_HOME/outpost/credentials.json` (default `~/.config/outpost/credentials.json`). */
export function credentialsPath(env = process.env): string {
  const base = env.XDG_CONFIG_HOME?.trim() || path.join(homedir(), ".config");
  return path.join(base, "outpost", "credentials.json");
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * The console's address as the CLI uses it: https only (through the proxy's one port), plain http only
 * to this machine's loopback (a local trial, tests). No path, query or credentials in it.
 */
export function checkedUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new CliError(`"${raw}" is not a URL: give the console's address, e.g. https://outpost.example.com`);
  }
  if (url.username || url.password || url.search || url.hash || (url.pathname !== "/" && url.pathname !== ""))
    throw new CliError(`give the console's address only (scheme, host, port), not "${raw}"`);
  if (url.protocol === "http:" && !LOOPBACK.has(url.hostname))
    throw new CliError(
      `${url.origin} is plain http: the CLI talks to Outpost over https only (http only to localhost)`,
    );
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new CliError(`${url.origin}: the address must start with https://`);
  return url.origin;
}

/**
 * The stored credentials, with OUTPOST_URL and OUTPOST_API_TOKEN each taking precedence over the file's.
 * Throws a CliError that says how to sign in when either is missing.
 */
export function loadCredentials(env = process.env): Credentials {
  let stored: Partial<Credentials> = {};
  const file = credentialsPath(env);
  try {
    stored = JSON.parse(readFileSync(file, "utf8")) as Partial<Credentials>;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT")
      throw new CliError(
        `${file} is not readable credentials (${(error as Error).message}): run outpost login again`,
      );
  }
  const url = env.OUTPOST_URL?.trim() || stored.url;
  const token = env.OUTPOST_API_TOKEN?.trim() || stored.token;
  if (!url || !token)
    throw new CliError("not signed in: run `outpost login` (or set OUTPOST_URL and OUTPOST_API_TOKEN)");
  return { url: checkedUrl(url), token };
}

/** Writes the credentials file readable by its owner only (0600, in a 0700 directory). */
export function saveCredentials(credentials: Credentials, env = process.env): string {
  const file = credentialsPath(env);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600); // an existing file keeps its mode on write
  return file;
}
