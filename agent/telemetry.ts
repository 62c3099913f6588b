import { createHash } from "node:crypto";
import os from "node:os";
import type { DeviceIdentity } from "./identity.ts";
import type { ScriptReport } from "./scripts/runner.ts";
import type { InstalledScript } from "./scripts/store.ts";
import { HEARTBEAT_MAX_BYTES, jsonLimitViolation, TELEMETRY_LIMITS } from "./telemetry-limits.ts";
import type { ConnectionStatus } from "./tunnel.ts";
import { AGENT_VERSION } from "./version.ts";

/** The telemetry schema a device announces: one property per installed script (its output schema). */
export interface SchemaDefinition {
  product: string;
  version: string;
  type: "object";
  properties: Record<string, Record<string, unknown>>;
}

/**
 * Build the schema definition from the latest installed scripts. `version` is derived from the script
 * names and versions (`s-<12 hex>`), so devices with the same scripts announce the same schema version.
 * Property `<script>.<field>` describes `telemetry.scripts.<script>.data.output.<field>`.
 * If the full schemas exceed the server's limits, a compact form is announced instead (top-level fields
 * and their types; scripts that still do not fit are announced as plain objects).
 */
export function buildSchemaDefinition(product: string, scripts: InstalledScript[]): SchemaDefinition {
  const sorted = [...scripts].sort((a, b) => a.meta.name.localeCompare(b.meta.name));
  const fingerprint = createHash("sha256")
    .update(JSON.stringify(sorted.map((s) => [s.meta.name, s.meta.version, s.meta.schema])))
    .digest("hex")
    .slice(0, 12);
  const full: Record<string, Record<string, unknown>> = {};
  for (const s of sorted) full[s.meta.name] = s.meta.schema;
  const definition: SchemaDefinition = {
    product,
    version: `s-${fingerprint}`,
    type: "object",
    properties: full,
  };
  if (withinSchemaLimits(definition)) return definition;
  // Too big for the server's limits: announce every script as a plain object, then give each (in name
  // order) its top-level fields and their types while the whole still fits.
  const compact: Record<string, Record<string, unknown>> = {};
  for (const s of sorted) compact[s.meta.name] = { type: "object" };
  for (const s of sorted) {
    const fields = (s.meta.schema.properties ?? {}) as Record<string, { type?: unknown }>;
    const properties: Record<string, unknown> = {};
    for (const [field, spec] of Object.entries(fields)) {
      const type = spec && typeof spec === "object" && typeof spec.type === "string" ? spec.type : undefined;
      properties[field] = type ? { type } : {};
    }
    const upgraded = { ...compact, [s.meta.name]: { type: "object", properties } };
    if (withinSchemaLimits({ ...definition, properties: upgraded }))
      compact[s.meta.name] = upgraded[s.meta.name];
  }
  return { ...definition, properties: compact };
}

/** The server's limits for an announced schema (docs/device-api.md): depth 8, 256 keys, 64 KiB. */
export const SCHEMA_DEFINITION_LIMITS = { maxDepth: 8, maxKeys: 256, maxBytes: 65536 };

export function withinSchemaLimits(value: unknown, limits = SCHEMA_DEFINITION_LIMITS): boolean {
  let keys = 0;
  const walk = (node: unknown, depth: number): boolean => {
    if (typeof node !== "object" || node === null) return true;
    if (depth > limits.maxDepth) return false;
    const children = Array.isArray(node) ? node : Object.values(node);
    if (!Array.isArray(node)) keys += children.length;
    if (keys > limits.maxKeys) return false;
    return children.every((child) => walk(child, depth + 1));
  };
  return walk(value, 1) && Buffer.byteLength(JSON.stringify(value)) <= limits.maxBytes;
}

export interface HeartbeatInput {
  uuid: string;
  identity: DeviceIdentity;
  reports: Map<string, ScriptReport>;
  schema: SchemaDefinition;
  connection: ConnectionStatus;
  collectedAt: Date;
  collectDurationMs: number;
  agentStartedAt: number;
  /** The sshd host key line (`ssh-ed25519 AAAA…`), when the agent could read it. */
  sshHostKey?: string;
}

/**
 * The heartbeat body: `{telemetry:{device, scripts, meta}, connection_status}`. It always stays within the
 * server's telemetry limits and body cap (a refused heartbeat would also stop command delivery): while it
 * does not, the largest remaining script output is replaced by an execution error
 * (`output exceeds telemetry limits: …`), then error details are dropped.
 */
export function buildHeartbeatBody(input: HeartbeatInput) {
  const reports = new Map(input.reports);
  for (;;) {
    const body = assembleHeartbeat(input, reports);
    const problem = heartbeatLimitProblem(body);
    if (!problem) return body;
    if (!shrinkOnce(reports, problem)) return body; // nothing left to shrink: send what we have
  }
}

/** Why the server would refuse this body (`keys`, `string_bytes`, …, or `body_bytes`), or null. */
export function heartbeatLimitProblem(body: ReturnType<typeof assembleHeartbeat>): string | null {
  // The server checks the telemetry without the schema definition, plus connection_status.
  const { schema_definition: _, ...meta } = body.telemetry.meta;
  const checked = { ...body.telemetry, meta, connection_status: body.connection_status };
  const violation = jsonLimitViolation(checked, TELEMETRY_LIMITS);
  if (violation) return `${violation.limit} (max ${violation.max})`;
  const bytes = Buffer.byteLength(JSON.stringify(body));
  if (bytes > HEARTBEAT_MAX_BYTES) return `body of ${bytes} bytes (max ${HEARTBEAT_MAX_BYTES})`;
  return null;
}

/** Replace the largest remaining output (else drop the largest error details); false when nothing is left. */
function shrinkOnce(reports: Map<string, ScriptReport>, problem: string): boolean {
  let largest: { name: string; size: number } | null = null;
  for (const [name, report] of reports) {
    if (report.output === undefined) continue;
    const size = JSON.stringify(report.output).length;
    if (!largest || size > largest.size) largest = { name, size };
  }
  if (largest) {
    const report = reports.get(largest.name)!;
    reports.set(largest.name, {
      status: "error",
      validation_status: "skipped",
      duration_ms: report.duration_ms,
      error: {
        type: "execution",
        message: `output exceeds telemetry limits: the heartbeat broke the server's limit on ${problem}; this output (${largest.size} bytes of JSON, the largest) was left out`,
      },
      ...(report.warnings ? { warnings: report.warnings } : {}),
    });
    return true;
  }
  for (const [name, report] of reports) {
    if (report.error?.details !== undefined) {
      const { details: _, ...error } = report.error;
      reports.set(name, { ...report, error });
      return true;
    }
  }
  return false;
}

function assembleHeartbeat(input: HeartbeatInput, reports: Map<string, ScriptReport>) {
  const scripts: Record<string, { data: ScriptReport }> = {};
  const errors: string[] = [];
  for (const [name, report] of reports) {
    scripts[name] = { data: report };
    if (report.error) errors.push(`${name}: ${report.error.message}`);
  }
  const meta: Record<string, unknown> = {
    schema_definition: input.schema,
    collected_at: input.collectedAt.toISOString(),
    collect_duration_ms: input.collectDurationMs,
    script_count: reports.size,
  };
  if (errors.length) meta.errors = errors;
  return {
    telemetry: {
      device: {
        uuid: input.uuid,
        mac_address: input.identity.mac_address,
        ip_address: input.identity.ip_address,
        hostname: input.identity.hostname,
        name: input.identity.name,
        interface: input.identity.interface,
        agent_version: AGENT_VERSION,
        agent_uptime_s: Math.round((Date.now() - input.agentStartedAt) / 1000),
        os: { platform: os.platform(), release: os.release(), arch: os.arch() },
      },
      scripts,
      meta,
    },
    connection_status: input.connection,
    ...(input.sshHostKey ? { ssh_host_key: input.sshHostKey } : {}),
  };
}
