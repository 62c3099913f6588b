// Telemetry as the agent makes it, for tests of what consumes it (ingest, alerts, reports, charts,
// rollups). Scripts are installed in the agent's own script store and run in its sandbox by its
// `collectTelemetry`; `buildHeartbeatBody` assembles the body and `buildSchemaDefinition` the schema
// it registers with. A test chooses what a script reports by writing the file the script reads with
// `read_file`, as the built-in scripts read /proc: nothing of the payload is shaped by the test.
import fs from "node:fs";
import path from "node:path";
import { BUILTIN_SCRIPT_SOURCES, ensureBuiltinScripts } from "../../agent/builtin-scripts/index.ts";
import { DEFAULT_READ_FILE_ALLOWLIST } from "../../agent/config.ts";
import { silentLogger } from "../../agent/logger.ts";
import { collectTelemetry } from "../../agent/poller.ts";
import { ScriptStore } from "../../agent/scripts/store.ts";
import { buildHeartbeatBody, buildSchemaDefinition, type SchemaDefinition } from "../../agent/telemetry.ts";
import { type ConnectionStatus, DisabledTunnel } from "../../agent/tunnel.ts";
import type { HeartbeatBody } from "../../modules/heartbeat/model";
import { parseHeartbeat } from "../../modules/heartbeat/service";
import { parseScript } from "../../shared/scripts/frontmatter.ts";
import { testConfig } from "../agent/helpers";

/** A script the agent runs: its name and the JSON schema of its output (front matter `schema`). */
export interface AgentScript {
  name: string;
  schema: Record<string, unknown>;
}

/** A built-in script's name and output schema, as the agent ships it (agent/builtin-scripts). */
export function builtinScript(name: string): AgentScript {
  const script = BUILTIN_SCRIPT_SOURCES.map(parseScript).find((s) => s.meta.name === name);
  if (!script) throw new Error(`no built-in script ${name}`);
  return { name, schema: script.meta.schema };
}

/** What each script's `main()` returns in the next collection, by script name; absent: the script fails. */
export type ScriptOutputs = Record<string, Record<string, unknown>>;

export type AgentHeartbeat = ReturnType<typeof buildHeartbeatBody>;

/** A script that returns what the test wrote to its file (a missing file fails it, as on a device). */
function scriptSource(script: AgentScript, file: string): string {
  return `/*---
name: ${script.name}
version: 1
schema: ${JSON.stringify(script.schema)}
---*/
// biome-ignore lint/correctness/noUnusedVariables: main() is called by the agent
function main() {
  return JSON.parse(read_file(${JSON.stringify(file)}));
}
`;
}

/**
 * One agent's scripts and configuration, in a new directory under `parent` (a test app's data
 * directory, removed with the app, or a directory of `tempDirs`).
 */
export class ScriptedAgent {
  private readonly dir: string;
  private readonly files = new Map<string, string>();
  private readonly ctx;
  private readonly startedAt = Date.now();

  /** `builtins`: the agent's built-in scripts run too, as installed on first start (they read /proc). */
  constructor(
    parent: string,
    readonly product: string,
    scripts: AgentScript[],
    options: { builtins?: boolean } = {},
  ) {
    this.dir = fs.mkdtempSync(path.join(parent, "agent-"));
    for (const script of scripts) this.files.set(script.name, path.join(this.dir, `${script.name}.json`));
    const config = testConfig(this.dir, {
      product_name: product,
      read_file_allowlist: [...(options.builtins ? DEFAULT_READ_FILE_ALLOWLIST : []), ...this.files.values()],
    });
    const store = new ScriptStore(config.scripts_dir);
    if (options.builtins) ensureBuiltinScripts(store);
    for (const script of scripts) store.install(scriptSource(script, this.files.get(script.name)!));
    this.ctx = { config, configSource: null, logger: silentLogger(), store };
  }

  /** The schema the agent registers and heartbeats with. */
  schema(): SchemaDefinition {
    return buildSchemaDefinition(this.product, this.ctx.store.latest());
  }

  /**
   * The heartbeat body the agent sends for device `uuid` when its scripts return `outputs`;
   * `connection`: its tunnel's status (a real `TunnelClient`'s), else a disabled tunnel's.
   */
  async heartbeat(
    uuid: string,
    outputs: ScriptOutputs,
    connection: ConnectionStatus = new DisabledTunnel().status(),
  ): Promise<AgentHeartbeat> {
    for (const [name, file] of this.files) {
      const output = outputs[name];
      if (output === undefined) fs.rmSync(file, { force: true });
      else fs.writeFileSync(file, JSON.stringify(output));
    }
    const telemetry = await collectTelemetry(this.ctx);
    return buildHeartbeatBody({
      uuid,
      identity: telemetry.identity,
      reports: telemetry.reports,
      schema: telemetry.schema,
      connection,
      collectedAt: new Date(),
      collectDurationMs: telemetry.durationMs,
      agentStartedAt: this.startedAt,
    });
  }
}

/** The payload the server stores for a heartbeat body (its own parser: what telemetry_events holds). */
export function storedPayload(body: AgentHeartbeat): Record<string, unknown> {
  return JSON.parse(parseHeartbeat(onTheWire(body)).payloadJson);
}

/** A body as the server reads it: JSON, sent and parsed. */
export function onTheWire(body: AgentHeartbeat): HeartbeatBody {
  return JSON.parse(JSON.stringify(body));
}
