// What a queued command may carry, checked before it is stored: its type, arguments, payload and key.
import { parseScript, ScriptFormatError, validateScriptName } from "../../shared/scripts/frontmatter";
import {
  parseRunOnceScript,
  RUN_SCRIPT_NAME_MAX,
  RUN_SCRIPT_TIMEOUT_MAX_S,
  RUN_SCRIPT_TIMEOUT_MIN_S,
} from "../../shared/scripts/run-once";
import { AppError, badRequest } from "../platform/errors";
import { isPlainObject } from "../platform/json-body";

export const COMMAND_TYPES = [
  "list_scripts",
  "install_script",
  "remove_script",
  "ssh_authorize",
  "ssh_revoke",
  // Beyond the spec's types: a script run once in the agent's sandbox, its output the result.
  "run_script",
] as const;
export type CommandType = (typeof COMMAND_TYPES)[number];

/** Largest payload a command may carry at all. */
export const MAX_PAYLOAD_BYTES = 1024 * 1024;

const SSH_KEY = /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( .{0,200})?$/;

function stringField(payload: Record<string, unknown> | undefined, name: string): string | undefined {
  const value = payload?.[name];
  return typeof value === "string" ? value : undefined;
}

/** Checks a command's shape for its type; throws 400 invalid_request naming the field. */
export function validateCommand(input: {
  type: string;
  args?: unknown;
  payload?: unknown;
  publicKey?: unknown;
}) {
  if (!(COMMAND_TYPES as readonly string[]).includes(input.type)) {
    throw badRequest(`type must be one of ${COMMAND_TYPES.join(", ")}`, { field: "type" });
  }
  const type = input.type as CommandType;
  const args = input.args ?? [];
  if (
    !Array.isArray(args) ||
    args.length > 32 ||
    !args.every((a) => typeof a === "string" && a.length <= 1024)
  ) {
    throw badRequest("args must be a list of at most 32 strings", { field: "args" });
  }
  if (input.payload !== undefined && input.payload !== null && !isPlainObject(input.payload)) {
    throw badRequest("payload must be a JSON object", { field: "payload" });
  }
  const payload = (input.payload ?? undefined) as Record<string, unknown> | undefined;
  if (payload && Buffer.byteLength(JSON.stringify(payload)) > MAX_PAYLOAD_BYTES) {
    throw new AppError(
      413,
      "payload_too_large",
      `A command payload may be at most ${MAX_PAYLOAD_BYTES} bytes`,
      {
        field: "payload",
      },
    );
  }
  if (input.publicKey !== undefined && input.publicKey !== null && typeof input.publicKey !== "string") {
    throw badRequest("public_key must be a string", { field: "public_key" });
  }
  const publicKey = (input.publicKey ?? undefined) as string | undefined;
  let checkedPayload = payload ?? null;
  switch (type) {
    case "install_script":
      if (!stringField(payload, "name") || typeof payload?.data !== "string" || payload.data === "") {
        throw badRequest("install_script needs payload.name and payload.data (the script text)", {
          field: "payload",
        });
      }
      checkScript(payload.data);
      break;
    case "remove_script": {
      const name = stringField(payload, "name") || args[0];
      if (typeof name !== "string" || name === "") {
        throw badRequest("remove_script needs the script name in args[0] or payload.name", { field: "args" });
      }
      checkScriptName(name, stringField(payload, "name") ? "payload.name" : "args");
      break;
    }
    case "ssh_authorize":
      if (!publicKey || !SSH_KEY.test(publicKey.trim())) {
        throw badRequest("ssh_authorize needs public_key, an OpenSSH public key", { field: "public_key" });
      }
      break;
    case "ssh_revoke":
      if (!stringField(payload, "name") && typeof args[0] !== "string") {
        throw badRequest("ssh_revoke needs the session ref in payload.name or args[0]", { field: "payload" });
      }
      break;
    case "run_script":
      checkedPayload = runScriptPayload(payload);
      break;
  }
  return { type, args: args as string[], payload: checkedPayload, publicKey: publicKey?.trim() ?? null };
}

/**
 * A run_script payload: `data` (the script, as installable scripts are sized and read), an optional
 * display `name` and `timeout_seconds`. Stored with LF line endings and the front matter's name as the
 * display name when none is given.
 */
function runScriptPayload(payload: Record<string, unknown> | undefined): Record<string, unknown> {
  if (typeof payload?.data !== "string") {
    throw badRequest("run_script needs payload.data (the script text)", { field: "payload.data" });
  }
  const script = runnableScript(payload.data);
  const name = payload.name ?? script.name;
  if (
    name !== undefined &&
    (typeof name !== "string" ||
      name.trim() === "" ||
      name.length > RUN_SCRIPT_NAME_MAX ||
      /[\p{Cc}]/u.test(name))
  ) {
    throw badRequest(`payload.name must be one line of at most ${RUN_SCRIPT_NAME_MAX} characters`, {
      field: "payload.name",
    });
  }
  const timeout = payload.timeout_seconds;
  if (
    timeout !== undefined &&
    timeout !== null &&
    (!Number.isInteger(timeout) ||
      (timeout as number) < RUN_SCRIPT_TIMEOUT_MIN_S ||
      (timeout as number) > RUN_SCRIPT_TIMEOUT_MAX_S)
  ) {
    throw badRequest(
      `payload.timeout_seconds must be a whole number of seconds from ${RUN_SCRIPT_TIMEOUT_MIN_S} to ${RUN_SCRIPT_TIMEOUT_MAX_S}`,
      { field: "payload.timeout_seconds" },
    );
  }
  return {
    data: script.source,
    ...(name === undefined ? {} : { name: (name as string).trim() }),
    ...(timeout === undefined || timeout === null ? {} : { timeout_seconds: timeout }),
  };
}

/**
 * Refuses, at once, a script the agent would refuse on its next poll: both use the agent's own
 * front-matter parser (CRLF from a browser's textarea is read as LF, as the agent does).
 */
export function checkScript(text: string): { name: string; source: string } {
  try {
    const parsed = parseScript(text);
    return { name: parsed.meta.name, source: parsed.source };
  } catch (error) {
    if (!(error instanceof ScriptFormatError)) throw error;
    throw badRequest(`The agent would refuse this script: ${error.message}`, { field: "payload.data" });
  }
}

/** Refuses a script name the agent would refuse (the one rule, shared/scripts/frontmatter.ts). */
function checkScriptName(name: string, field: string) {
  try {
    validateScriptName(name);
  } catch (error) {
    if (!(error instanceof ScriptFormatError)) throw error;
    throw badRequest(`The agent would refuse this script name: ${error.message}`, { field });
  }
}

/** Largest script an operator may install from the console (a file or pasted text). */
export const SCRIPT_MAX_BYTES = 256 * 1024;

/** The one size rule of a script sent to a device (installed or run once). */
function checkScriptSize(size: number) {
  if (size > SCRIPT_MAX_BYTES) {
    throw badRequest(`The script is larger than ${SCRIPT_MAX_BYTES / 1024} KiB.`, { field: "payload.data" });
  }
}

/**
 * A script an operator installs, as a file or pasted text: within SCRIPT_MAX_BYTES (a file's size is
 * checked before it is read), not empty, and one the agent accepts (checkScript).
 */
export async function installableScript(input: string | Blob): Promise<{ name: string; source: string }> {
  checkScriptSize(typeof input === "string" ? Buffer.byteLength(input) : input.size);
  const source = typeof input === "string" ? input : await input.text();
  if (source.trim() === "") throw badRequest("The script is empty.", { field: "payload.data" });
  return checkScript(source);
}

/**
 * A script to run once (run_script): within SCRIPT_MAX_BYTES, not empty, and one the agent would run
 * (shared/scripts/run-once.ts: JavaScript, optional front matter checked as an installed script's).
 */
export function runnableScript(text: string): { name: string | undefined; source: string } {
  checkScriptSize(Buffer.byteLength(text));
  try {
    return parseRunOnceScript(text);
  } catch (error) {
    if (!(error instanceof ScriptFormatError)) throw error;
    throw badRequest(`The agent would refuse this script: ${error.message}`, { field: "payload.data" });
  }
}
