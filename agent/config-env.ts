// `OUTPOST_AGENT_<KEY>` environment variables over the configuration file (docs/agent.md).
import { ConfigError } from "./config-error.ts";

type JsonType =
  | "string"
  | "number"
  | "integer"
  | "boolean"
  | "array"
  | "integer-array"
  | "object"
  | "nullable-string";

/** How each key is parsed from an `OUTPOST_AGENT_<KEY>` environment variable. */
const ENV_KEYS: Record<string, JsonType> = {
  server_url: "string",
  enrolment_token: "nullable-string",
  product_name: "string",
  labels: "object",
  interface: "nullable-string",
  poll_interval_s: "number",
  poll_max_backoff_s: "number",
  long_poll: "boolean",
  register_retry_base_ms: "integer",
  register_retry_max_s: "number",
  register_pending_poll_s: "number",
  register_max_attempts: "integer",
  http_timeout_ms: "integer",
  state_dir: "string",
  scripts_dir: "string",
  install_builtin_scripts: "boolean",
  authorized_keys_path: "string",
  ssh_target_user: "string",
  ssh_max_ttl_s: "integer",
  ssh_host_key_path: "nullable-string",
  command_timeout_ms: "integer",
  max_commands_per_poll: "integer",
  run_script_enabled: "boolean",
  script_timeout_ms: "integer",
  script_warn_ms: "integer",
  script_memory_mb: "integer",
  script_concurrency: "integer",
  read_file_allowlist: "array",
  read_file_max_bytes: "integer",
  exec_allowlist: "array",
  exec_timeout_ms: "integer",
  exec_max_output_bytes: "integer",
  exec_work_dir: "string",
  exec_env: "object",
  exec_user: "nullable-string",
  exec_group: "nullable-string",
  "mqtt.url": "string",
  "mqtt.username": "nullable-string",
  "mqtt.password": "nullable-string",
  "mqtt.publish_allowlist": "array",
  "mqtt.subscribe_allowlist": "array",
  "mqtt.timeout_ms": "integer",
  "tunnel.server": "nullable-string",
  "tunnel.web_target": "string",
  "tunnel.ssh_target": "string",
  "tunnel.forward_ports": "integer-array",
  log_level: "string",
};

/** Environment variable name for a (possibly dotted) config key: `mqtt.url` → `OUTPOST_AGENT_MQTT_URL`. */
export function envVarName(key: string): string {
  return `OUTPOST_AGENT_${key.replace(/\./g, "_").toUpperCase()}`;
}

function parseEnvValue(name: string, raw: string, type: JsonType): unknown {
  switch (type) {
    case "string":
      return raw;
    case "nullable-string":
      return raw === "" ? null : raw;
    case "number":
    case "integer": {
      const n = Number(raw);
      if (raw.trim() === "" || !Number.isFinite(n))
        throw new ConfigError(`${name} must be a number, got "${raw}"`);
      return n;
    }
    case "boolean":
      if (/^(1|true|yes|on)$/i.test(raw)) return true;
      if (/^(0|false|no|off)$/i.test(raw)) return false;
      throw new ConfigError(`${name} must be a boolean (true/false), got "${raw}"`);
    case "array": {
      const trimmed = raw.trim();
      if (trimmed.startsWith("[")) return parseJsonEnv(name, trimmed);
      return trimmed === "" ? [] : trimmed.split(",").map((s) => s.trim());
    }
    case "integer-array": {
      const trimmed = raw.trim();
      if (trimmed.startsWith("[")) return parseJsonEnv(name, trimmed);
      // `5900,502`: numbers, so the file's schema (integers) checks them as it checks the file's.
      return trimmed === "" ? [] : trimmed.split(",").map((s) => (s.trim() === "" ? s : Number(s)));
    }
    case "object":
      return parseJsonEnv(name, raw);
  }
}

function parseJsonEnv(name: string, raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    throw new ConfigError(`${name} must be JSON, got "${raw}"`);
  }
}

/** Apply `OUTPOST_AGENT_*` overrides on top of the raw file object. Unknown variables are rejected. */
export function applyEnvOverrides(raw: Record<string, unknown>, env: Record<string, string | undefined>) {
  const known = new Map(Object.entries(ENV_KEYS).map(([key, type]) => [envVarName(key), { key, type }]));
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith("OUTPOST_AGENT_") || value === undefined || name === "OUTPOST_AGENT_CONFIG")
      continue;
    const entry = known.get(name);
    if (!entry) throw new ConfigError(`unknown environment variable ${name}`);
    const parsed = parseEnvValue(name, value, entry.type);
    const [head, tail] = entry.key.split(".");
    if (tail) {
      const nested = (raw[head] ?? {}) as Record<string, unknown>;
      if (typeof nested !== "object" || nested === null) throw new ConfigError(`${head} must be a mapping`);
      nested[tail] = parsed;
      raw[head] = nested;
    } else {
      raw[head] = parsed;
    }
  }
}
