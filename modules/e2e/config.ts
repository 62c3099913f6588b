import { readFileSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { type Config, ConfigError } from "../platform/config";

export const RUNNER_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const ENVIRONMENT_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const JOURNEY_PATTERN = /^[a-z0-9_]+$/;
const SUITE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const MIN_TOKEN_BYTES = 32;

export interface E2EEnvironment {
  label: string;
  /** argv of the seed command; undefined = no seed for this environment. */
  seed: string[] | undefined;
  seedTimeoutS: number;
}

export interface E2EConfig {
  /** The file this came from; relative paths inside it are relative to its folder. */
  file: string;
  directory: string;
  protocolVersions: string[];
  allowedEnvironments: string[];
  environments: Map<string, E2EEnvironment>;
  suites: Map<string, string[]>;
  journeysDir: string;
  /** runner id → token (already resolved from env: references). */
  runners: Map<string, string>;
  retention: { days: number; maxRuns: number; maxLogBytes: number };
  runTimeoutS: number;
  maxLogUploadBytes: number;
  idempotencyTtlS: number;
  /** How long a create waits beyond the seed timeout for a worker to pick the seed job up. */
  seedPickupGraceS: number;
}

export const E2E_DEFAULTS = {
  protocolVersions: ["1"],
  seedTimeoutS: 120,
  retention: { days: 14, maxRuns: 2000, maxLogBytes: 1_000_000_000 },
  runTimeoutS: 7200,
  maxLogUploadBytes: 5 * 1024 * 1024,
  idempotencyTtlS: 24 * 3600,
  seedPickupGraceS: 30,
};

type Env = Record<string, string | undefined>;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Parses and validates an E2E configuration file. Every problem is a ConfigError whose message is
 * one line naming the file and the key.
 */
export function loadE2EConfig(file: string, env: Env = process.env): E2EConfig {
  const absolute = path.resolve(file);
  const fail = (key: string, problem: string): never => {
    throw new ConfigError(`E2E_CONFIG ${file}: ${key} ${problem}`);
  };
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(absolute, "utf8"));
  } catch (error) {
    const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
    throw new ConfigError(`E2E_CONFIG ${file}: cannot be read as YAML (${reason})`);
  }
  if (!isObject(raw)) fail("(top level)", "must be a mapping");
  const doc = raw as Record<string, unknown>;
  const known = [
    "protocol_versions",
    "allowed_environments",
    "environments",
    "suites",
    "journeys_dir",
    "runners",
    "retention",
    "run_timeout_s",
    "max_log_upload_bytes",
    "idempotency_ttl_s",
    "seed_pickup_grace_s",
  ];
  for (const key of Object.keys(doc))
    if (!known.includes(key)) fail(key, `is not a known key (known: ${known.join(", ")})`);

  const positiveInt = (key: string, value: unknown, fallback: number, min = 1): number => {
    if (value === undefined || value === null) return fallback;
    if (typeof value !== "number" || !Number.isInteger(value) || value < min)
      fail(key, `must be an integer ≥ ${min}`);
    return value as number;
  };
  const stringList = (key: string, value: unknown, pattern?: RegExp): string[] => {
    if (!Array.isArray(value) || value.some((item) => typeof item !== "string" || item.trim() === "")) {
      fail(key, "must be a list of non-empty strings");
    }
    const list = (value as string[]).map((item) => item.trim());
    if (pattern)
      for (const item of list) if (!pattern.test(item)) fail(key, `has an invalid entry "${item}"`);
    if (new Set(list).size !== list.length) fail(key, "has duplicate entries");
    return list;
  };

  const protocolVersions =
    doc.protocol_versions === undefined
      ? E2E_DEFAULTS.protocolVersions
      : stringList("protocol_versions", doc.protocol_versions);
  if (protocolVersions.length === 0) fail("protocol_versions", "must not be empty");

  if (doc.allowed_environments === undefined) fail("allowed_environments", "is required");
  const allowedEnvironments = stringList(
    "allowed_environments",
    doc.allowed_environments,
    ENVIRONMENT_PATTERN,
  );

  const environments = new Map<string, E2EEnvironment>();
  const envDoc = doc.environments ?? {};
  if (!isObject(envDoc)) fail("environments", "must be a mapping of environment label to settings");
  for (const [label, value] of Object.entries(envDoc as Record<string, unknown>)) {
    const key = `environments.${label}`;
    if (!ENVIRONMENT_PATTERN.test(label)) fail(key, "is not a valid environment label");
    const settings = value ?? {};
    if (!isObject(settings)) fail(key, "must be a mapping with seed and seed_timeout_s");
    const s = settings as Record<string, unknown>;
    for (const name of Object.keys(s))
      if (!["seed", "seed_timeout_s"].includes(name)) fail(`${key}.${name}`, "is not a known key");
    let seed: string[] | undefined;
    if (s.seed !== undefined && s.seed !== null) {
      if (
        !Array.isArray(s.seed) ||
        s.seed.length === 0 ||
        s.seed.some((a) => typeof a !== "string" || a === "")
      ) {
        fail(`${key}.seed`, "must be a non-empty list of strings (the argv of the seed command)");
      }
      seed = s.seed as string[];
    }
    environments.set(label, {
      label,
      seed,
      seedTimeoutS: positiveInt(`${key}.seed_timeout_s`, s.seed_timeout_s, E2E_DEFAULTS.seedTimeoutS),
    });
  }
  for (const label of allowedEnvironments) {
    if (!environments.has(label))
      environments.set(label, { label, seed: undefined, seedTimeoutS: E2E_DEFAULTS.seedTimeoutS });
  }

  const suites = new Map<string, string[]>();
  if (!isObject(doc.suites)) fail("suites", "is required: a mapping of suite id to a list of journey ids");
  for (const [id, journeys] of Object.entries(doc.suites as Record<string, unknown>)) {
    if (!SUITE_PATTERN.test(id)) fail(`suites.${id}`, "is not a valid suite id");
    const list = stringList(`suites.${id}`, journeys, JOURNEY_PATTERN);
    if (list.length === 0) fail(`suites.${id}`, "must list at least one journey");
    suites.set(id, list);
  }

  if (doc.journeys_dir !== undefined && (typeof doc.journeys_dir !== "string" || doc.journeys_dir === "")) {
    fail("journeys_dir", "must be a path");
  }
  const directory = path.dirname(absolute);
  const journeysDir = path.resolve(directory, (doc.journeys_dir as string | undefined) ?? "journeys");

  const runners = new Map<string, string>();
  const runnersDoc = doc.runners ?? {};
  if (!isObject(runnersDoc)) fail("runners", "must be a mapping of runner id to token");
  for (const [id, value] of Object.entries(runnersDoc as Record<string, unknown>)) {
    const key = `runners.${id}`;
    if (!RUNNER_ID_PATTERN.test(id)) fail(key, "is not a valid runner id (1–64 of A-Z a-z 0-9 . _ -)");
    if (typeof value !== "string" || value === "") fail(key, "must be a token or env:NAME");
    let token = value as string;
    if (token.startsWith("env:")) {
      const name = token.slice(4);
      const fromEnv = env[name]?.trim();
      if (!fromEnv) fail(key, `reads environment variable ${name}, which is not set`);
      token = fromEnv as string;
    }
    if (Buffer.byteLength(token) < MIN_TOKEN_BYTES)
      fail(key, `token must be at least ${MIN_TOKEN_BYTES} bytes`);
    runners.set(id, token);
  }

  const retentionDoc = doc.retention ?? {};
  if (!isObject(retentionDoc)) fail("retention", "must be a mapping with days, max_runs, max_log_bytes");
  const r = retentionDoc as Record<string, unknown>;
  for (const name of Object.keys(r))
    if (!["days", "max_runs", "max_log_bytes"].includes(name))
      fail(`retention.${name}`, "is not a known key");
  const retention = {
    days: positiveInt("retention.days", r.days, E2E_DEFAULTS.retention.days),
    maxRuns: positiveInt("retention.max_runs", r.max_runs, E2E_DEFAULTS.retention.maxRuns),
    maxLogBytes: positiveInt(
      "retention.max_log_bytes",
      r.max_log_bytes,
      E2E_DEFAULTS.retention.maxLogBytes,
      0,
    ),
  };

  return {
    file: absolute,
    directory,
    protocolVersions,
    allowedEnvironments,
    environments,
    suites,
    journeysDir,
    runners,
    retention,
    runTimeoutS: positiveInt("run_timeout_s", doc.run_timeout_s, E2E_DEFAULTS.runTimeoutS),
    maxLogUploadBytes: positiveInt(
      "max_log_upload_bytes",
      doc.max_log_upload_bytes,
      E2E_DEFAULTS.maxLogUploadBytes,
    ),
    idempotencyTtlS: positiveInt("idempotency_ttl_s", doc.idempotency_ttl_s, E2E_DEFAULTS.idempotencyTtlS),
    seedPickupGraceS: positiveInt(
      "seed_pickup_grace_s",
      doc.seed_pickup_grace_s,
      E2E_DEFAULTS.seedPickupGraceS,
    ),
  };
}

const cache = new Map<string, E2EConfig>();

/**
 * The E2E configuration of this process, loaded once per file. Undefined when E2E is off and no
 * E2E_CONFIG is set; a ConfigError when E2E is on without a file.
 */
export function e2eConfigFor(config: Pick<Config, "e2eEnabled" | "e2eConfig">): E2EConfig | undefined {
  if (!config.e2eConfig) {
    if (config.e2eEnabled)
      throw new ConfigError("E2E_ENABLED=true needs E2E_CONFIG naming the E2E configuration file");
    return undefined;
  }
  const key = path.resolve(config.e2eConfig);
  let loaded = cache.get(key);
  if (!loaded) {
    loaded = loadE2EConfig(config.e2eConfig);
    cache.set(key, loaded);
  }
  return loaded;
}
