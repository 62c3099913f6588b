// Every agent setting: its type, default and file schema, and loading them. A new key also gets its
// environment variable's type in config-env.ts.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Type } from "@sinclair/typebox";
import { Value, ValueErrorType } from "@sinclair/typebox/value";
import YAML from "yaml";
import { labelsProblem } from "../shared/labels.ts";
import { applyEnvOverrides } from "./config-env.ts";
import {
  currentProcessIds,
  ExecIdentityError,
  type IdentityFiles,
  resolveExecIdentity,
} from "./exec-identity.ts";

/** MQTT settings used by the `pub_and_get` script builtin. */
export interface MqttConfig {
  url: string;
  username: string | null;
  password: string | null;
  publish_allowlist: string[];
  subscribe_allowlist: string[];
  timeout_ms: number;
}

/** Remote-access tunnel settings (docs/remote-access.md). */
export interface TunnelConfig {
  /**
   * `host:port` of the tunnel SSH server, or several comma-separated (any serves; a host name stands for
   * every address it resolves to); null = the server_url host, port 7000.
   */
  server: string | null;
  /** Where the `http` forward connects: the device web UI (`https://` with a self-signed cert works). */
  web_target: string;
  /** Where the `ssh` forward connects (`host:port`). */
  ssh_target: string;
  /**
   * Ports on 127.0.0.1 an operator may reach with `outpost forward` (VNC, Modbus…); none by default.
   * The tunnel offers exactly these and the agent connects no other.
   */
  forward_ports?: number[];
}

/** The fully resolved agent configuration (file + environment + defaults). */
export interface AgentConfig {
  server_url: string;
  /** Sent with registrations: a new device follows the token's policy (Settings → Enrolment tokens). */
  enrolment_token: string | null;
  product_name: string;
  /** `key=value` labels this device declares (shared/labels.ts rules), sent with every registration. */
  labels: Record<string, string>;
  interface: string | null;
  poll_interval_s: number;
  poll_max_backoff_s: number;
  /** Between polls, hold a wait open on the server, which answers it early when there is work. */
  long_poll: boolean;
  register_retry_base_ms: number;
  register_retry_max_s: number;
  register_pending_poll_s: number;
  register_max_attempts: number;
  http_timeout_ms: number;
  state_dir: string;
  scripts_dir: string;
  install_builtin_scripts: boolean;
  authorized_keys_path: string;
  ssh_target_user: string;
  ssh_max_ttl_s: number;
  /** The sshd public host key reported with heartbeats, so the server can pin it (null: none). */
  ssh_host_key_path: string | null;
  command_timeout_ms: number;
  max_commands_per_poll: number;
  /** Whether the server may run a script once (`run_script`); off unless the operator turns it on. */
  run_script_enabled: boolean;
  script_timeout_ms: number;
  script_warn_ms: number;
  script_memory_mb: number;
  script_concurrency: number;
  read_file_allowlist: string[];
  read_file_max_bytes: number;
  exec_allowlist: string[];
  exec_timeout_ms: number;
  exec_max_output_bytes: number;
  exec_work_dir: string;
  exec_env: Record<string, string>;
  /** User `exec_cmd` runs commands as (name or uid); null = `nobody` when root, else the agent's user. */
  exec_user: string | null;
  /** Group of executed commands (name or gid); null = the primary group of `exec_user`. */
  exec_group: string | null;
  mqtt: MqttConfig;
  tunnel: TunnelConfig;
  log_level: "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "silent";
}

/** Where the configuration came from, for `status` and error messages. */
export interface LoadedConfig {
  config: AgentConfig;
  source: string | null;
}

import { ConfigError } from "./config-error.ts";

export { ConfigError };

const isRoot = typeof process.getuid === "function" && process.getuid() === 0;

/** Default state directory: system-wide when running as root, per-user otherwise. */
export function defaultStateDir(): string {
  return isRoot ? "/var/lib/outpost-agent" : path.join(os.homedir(), ".local/state/outpost-agent");
}

/** Files the built-in scripts read; operators may extend the list. */
export const DEFAULT_READ_FILE_ALLOWLIST = [
  "/proc/loadavg",
  "/proc/stat",
  "/proc/meminfo",
  "/proc/uptime",
  "/proc/net/dev",
  "/proc/mounts",
];

/** Build the defaults; paths that depend on `state_dir` are derived from it. */
export function defaultConfig(stateDir = defaultStateDir()): AgentConfig {
  return {
    server_url: "http://localhost:4000",
    enrolment_token: null,
    product_name: "outpost-linux",
    labels: {},
    interface: null,
    poll_interval_s: 30,
    poll_max_backoff_s: 300,
    long_poll: true,
    register_retry_base_ms: 2000,
    register_retry_max_s: 60,
    register_pending_poll_s: 10,
    register_max_attempts: 0,
    http_timeout_ms: 10000,
    state_dir: stateDir,
    scripts_dir: path.join(stateDir, "scripts"),
    install_builtin_scripts: true,
    authorized_keys_path: "/home/outpost-support/.ssh/authorized_keys",
    ssh_target_user: "outpost-support",
    ssh_max_ttl_s: 3600,
    ssh_host_key_path: "/etc/ssh/ssh_host_ed25519_key.pub",
    command_timeout_ms: 5000,
    max_commands_per_poll: 50,
    run_script_enabled: false,
    script_timeout_ms: 5000,
    script_warn_ms: 3000,
    script_memory_mb: 64,
    script_concurrency: 4,
    read_file_allowlist: [...DEFAULT_READ_FILE_ALLOWLIST],
    read_file_max_bytes: 65536,
    exec_allowlist: [],
    exec_timeout_ms: 5000,
    exec_max_output_bytes: 65536,
    exec_work_dir: "/",
    exec_env: {},
    exec_user: null,
    exec_group: null,
    mqtt: {
      url: "mqtt://127.0.0.1:1883",
      username: null,
      password: null,
      publish_allowlist: [],
      subscribe_allowlist: [],
      timeout_ms: 5000,
    },
    tunnel: {
      server: null,
      web_target: "http://127.0.0.1:80",
      ssh_target: "127.0.0.1:22",
      forward_ports: [],
    },
    log_level: "info",
  };
}

const AbsolutePath = () => Type.String({ minLength: 1, pattern: "^/" });
const StringList = () => Type.Array(Type.String({ minLength: 1 }));
const Int = (minimum: number, maximum?: number) =>
  Type.Integer(maximum === undefined ? { minimum } : { minimum, maximum });
const NullableString = (pattern?: string) =>
  Type.Union([Type.String(pattern ? { pattern } : {}), Type.Null()]);
/** A user or group name, or a numeric id (YAML may give the id as a number). */
const ACCOUNT_PATTERN = "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$";
const Account = (what: "user" | "group") =>
  Type.Union([Type.String({ pattern: ACCOUNT_PATTERN }), Int(0, 4294967294), Type.Null()], {
    problem: `must be a ${what} name or a numeric ${what === "user" ? "uid" : "gid"}`,
  });

/**
 * Schema of the configuration file (every key optional; unknown keys rejected). TypeBox's interpreted
 * check is used instead of a compiled validator: it costs nothing at start-up.
 */
const ConfigFileSchema = Type.Object(
  {
    server_url: Type.Optional(Type.String({ pattern: "^https?://[^\\s]+$" })),
    enrolment_token: Type.Optional(NullableString("^[A-Za-z0-9_-]{1,256}$")),
    product_name: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    // Keys and values are checked by shared/labels.ts after the shape (its messages name the label).
    labels: Type.Optional(Type.Record(Type.String(), Type.String())),
    interface: Type.Optional(NullableString("^[A-Za-z0-9_.:@-]{1,15}$")),
    poll_interval_s: Type.Optional(Type.Number({ minimum: 1, maximum: 86400 })),
    poll_max_backoff_s: Type.Optional(Type.Number({ minimum: 1, maximum: 86400 })),
    long_poll: Type.Optional(Type.Boolean()),
    register_retry_base_ms: Type.Optional(Int(1, 600000)),
    register_retry_max_s: Type.Optional(Type.Number({ minimum: 0.001, maximum: 86400 })),
    register_pending_poll_s: Type.Optional(Type.Number({ minimum: 0.001, maximum: 3600 })),
    register_max_attempts: Type.Optional(Int(0)),
    http_timeout_ms: Type.Optional(Int(100, 300000)),
    state_dir: Type.Optional(AbsolutePath()),
    scripts_dir: Type.Optional(AbsolutePath()),
    install_builtin_scripts: Type.Optional(Type.Boolean()),
    authorized_keys_path: Type.Optional(Type.String({ pattern: "^/.*authorized_keys[^/]*$" })),
    ssh_target_user: Type.Optional(Type.String({ pattern: "^[a-z_][a-z0-9_.-]{0,31}$" })),
    ssh_max_ttl_s: Type.Optional(Int(1, 86400)),
    ssh_host_key_path: Type.Optional(NullableString("^/")),
    command_timeout_ms: Type.Optional(Int(10, 600000)),
    max_commands_per_poll: Type.Optional(Int(1, 1000)),
    run_script_enabled: Type.Optional(Type.Boolean()),
    script_timeout_ms: Type.Optional(Int(10, 600000)),
    script_warn_ms: Type.Optional(Int(1, 600000)),
    script_memory_mb: Type.Optional(Int(17, 1024)),
    script_concurrency: Type.Optional(Int(1, 256)),
    read_file_allowlist: Type.Optional(Type.Array(AbsolutePath())),
    read_file_max_bytes: Type.Optional(Int(1, 16777216)),
    exec_allowlist: Type.Optional(Type.Array(AbsolutePath())),
    exec_timeout_ms: Type.Optional(Int(10, 600000)),
    exec_max_output_bytes: Type.Optional(Int(1, 16777216)),
    exec_work_dir: Type.Optional(AbsolutePath()),
    exec_env: Type.Optional(Type.Record(Type.String(), Type.String())),
    exec_user: Type.Optional(Account("user")),
    exec_group: Type.Optional(Account("group")),
    mqtt: Type.Optional(
      Type.Object(
        {
          url: Type.Optional(Type.String({ pattern: "^(mqtts?|wss?|tcp|ssl)://[^\\s]+$" })),
          username: Type.Optional(NullableString()),
          password: Type.Optional(NullableString()),
          publish_allowlist: Type.Optional(StringList()),
          subscribe_allowlist: Type.Optional(StringList()),
          timeout_ms: Type.Optional(Int(10, 600000)),
        },
        { additionalProperties: false },
      ),
    ),
    tunnel: Type.Optional(
      Type.Object(
        {
          server: Type.Optional(NullableString("^[^\\s/:,]+:\\d{1,5}( *, *[^\\s/:,]+:\\d{1,5})*$")),
          web_target: Type.Optional(Type.String({ pattern: "^https?://[^\\s/]+(:\\d{1,5})?/?$" })),
          ssh_target: Type.Optional(Type.String({ pattern: "^[^\\s/:]+:\\d{1,5}$" })),
          forward_ports: Type.Optional(Type.Array(Int(1, 65535), { maxItems: 64, uniqueItems: true })),
        },
        { additionalProperties: false },
      ),
    ),
    log_level: Type.Optional(
      Type.Union(["trace", "debug", "info", "warn", "error", "fatal", "silent"].map((l) => Type.Literal(l))),
    ),
  },
  { additionalProperties: false },
);

/** The first problem of a raw config object, as "<dotted.key> <message>", or null when it is valid. */
function firstConfigProblem(raw: unknown): string | null {
  if (Value.Check(ConfigFileSchema, raw)) return null;
  const errors = [...Value.Errors(ConfigFileSchema, raw)];
  const pick =
    errors.find(
      (e) => e.type === ValueErrorType.ObjectAdditionalProperties || e.message === "Unexpected property",
    ) ?? errors[0];
  if (!pick) return "config is invalid";
  const key = pick.path.replace(/^\//, "").replace(/\//g, ".");
  if (pick.message === "Unexpected property") return `unknown key "${key}"`;
  const error = errors.find((e) => e.path === pick.path && e.type !== ValueErrorType.Union) ?? pick;
  let message = `${error.message.charAt(0).toLowerCase()}${error.message.slice(1)}`;
  const problem = (pick.schema as { problem?: unknown }).problem;
  if (typeof problem === "string") message = problem;
  if (error.type === ValueErrorType.StringPattern) {
    const pattern = (error.schema as { pattern?: string }).pattern ?? "";
    if (pattern === "^/") message = "must be an absolute path";
    else if (pattern.startsWith("^https?")) message = "must be an http:// or https:// URL";
    else if (pattern.startsWith("^(mqtt")) message = "must be an mqtt://, mqtts://, ws:// or wss:// URL";
    else if (pattern.includes("authorized_keys"))
      message = "must be an absolute path whose file name contains authorized_keys";
  }
  return `${key || "config"}: ${message}`;
}

export const SYSTEM_CONFIG_FILE = "/etc/outpost/agent.yaml";

/** Candidate configuration files, in order; the first that exists is used. */
export function configCandidates(
  env: Record<string, string | undefined>,
  systemFile = SYSTEM_CONFIG_FILE,
): string[] {
  const home = env.HOME || os.homedir();
  return [systemFile, path.join(home, ".config/outpost/agent.yaml")];
}

export interface LoadConfigOptions {
  /** Explicit file (`--config`); overrides `OUTPOST_AGENT_CONFIG` and the search path. Must exist. */
  file?: string;
  env?: Record<string, string | undefined>;
  /** The system-wide file searched first (default /etc/outpost/agent.yaml; tests point it elsewhere). */
  systemFile?: string;
  /** The passwd/group files `exec_user`/`exec_group` are checked against (tests point them elsewhere). */
  identityFiles?: IdentityFiles;
}

/** Load, merge and validate the configuration. Throws ConfigError with one clear line on problems. */
export function loadConfig(options: LoadConfigOptions = {}): LoadedConfig {
  const env = options.env ?? process.env;
  const explicit = options.file ?? env.OUTPOST_AGENT_CONFIG;
  let source: string | null = null;
  let raw: Record<string, unknown> = {};
  if (explicit) {
    if (!fs.existsSync(explicit)) throw new ConfigError(`config file not found: ${explicit}`);
    source = path.resolve(explicit);
  } else {
    source = configCandidates(env, options.systemFile).find((p) => fs.existsSync(p)) ?? null;
  }
  if (source) raw = readConfigFile(source);
  applyEnvOverrides(raw, env);
  const problem = firstConfigProblem(raw);
  if (problem) {
    const where = source ? ` (in ${source} or OUTPOST_AGENT_* environment)` : "";
    throw new ConfigError(`invalid configuration: ${problem}${where}`);
  }
  const stateDir = (raw.state_dir as string | undefined) ?? defaultStateDir();
  const defaults = defaultConfig(stateDir);
  const config: AgentConfig = {
    ...defaults,
    ...(raw as Partial<AgentConfig>),
    mqtt: { ...defaults.mqtt, ...((raw.mqtt as Partial<MqttConfig> | undefined) ?? {}) },
    tunnel: { ...defaults.tunnel, ...((raw.tunnel as Partial<TunnelConfig> | undefined) ?? {}) },
  };
  const labelProblem = labelsProblem(config.labels);
  if (labelProblem) throw new ConfigError(`invalid configuration: labels: ${labelProblem.message}`);
  if (config.script_warn_ms >= config.script_timeout_ms) {
    throw new ConfigError("invalid configuration: script_warn_ms must be lower than script_timeout_ms");
  }
  config.server_url = config.server_url.replace(/\/+$/, "");
  config.exec_user = config.exec_user === null ? null : String(config.exec_user);
  config.exec_group = config.exec_group === null ? null : String(config.exec_group);
  try {
    // Unknown names fail here, at start-up; exec_cmd resolves again at use (the files may change).
    resolveExecIdentity(config.exec_user, config.exec_group, currentProcessIds(), options.identityFiles);
  } catch (err) {
    if (err instanceof ExecIdentityError) throw new ConfigError(`invalid configuration: ${err.message}`);
    throw err;
  }
  return { config, source };
}

function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    throw new ConfigError(`cannot read config file ${file}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = YAML.parse(text);
  } catch (err) {
    throw new ConfigError(`config file ${file} is not valid YAML: ${(err as Error).message.split("\n")[0]}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new ConfigError(`config file ${file} must contain a YAML mapping`);
  }
  return parsed as Record<string, unknown>;
}
