import path from "node:path";
import type { AgentConfig } from "../config.ts";
import type { HostBuiltins } from "../scripts/sandbox.ts";
import { execCmdBuiltin } from "./exec-cmd.ts";
import { pubAndGetBuiltin } from "./mqtt.ts";
import { readFileBuiltin } from "./read-file.ts";
import { ScriptMemo, sleepBuiltin, statfsBuiltin } from "./system.ts";

/** Shared memo store for the agent process. */
export const processMemo = new ScriptMemo();

/** Names of the builtins a script can call (plus `JSON` and `console`, which are QuickJS/sandbox intrinsics). */
export const BUILTIN_NAMES = [
  "read_file",
  "exec_cmd",
  "pub_and_get",
  "statfs",
  "sleep",
  "memo_get",
  "memo_set",
] as const;

/** Paths a script may never read: agent state (credentials), the authorized_keys file and the config. */
export function protectedPaths(config: AgentConfig, configSource: string | null): string[] {
  return [
    config.state_dir,
    config.scripts_dir,
    path.dirname(config.authorized_keys_path),
    configSource ?? "",
    "/etc/outpost",
  ].filter((p) => p !== "");
}

/** Build the builtins of one script run, bound to the configured policies. */
export function createBuiltins(
  config: AgentConfig,
  scriptName: string,
  configSource: string | null = null,
  memo = processMemo,
): HostBuiltins {
  const readPolicy = {
    allowlist: config.read_file_allowlist,
    denylist: protectedPaths(config, configSource),
    maxBytes: config.read_file_max_bytes,
  };
  const execPolicy = {
    allowlist: config.exec_allowlist,
    timeoutMs: Math.min(config.exec_timeout_ms, config.script_timeout_ms),
    maxOutputBytes: config.exec_max_output_bytes,
    workDir: config.exec_work_dir,
    extraEnv: config.exec_env,
    user: config.exec_user,
    group: config.exec_group,
  };
  const mqttPolicy = {
    url: config.mqtt.url,
    username: config.mqtt.username,
    password: config.mqtt.password,
    publishAllowlist: config.mqtt.publish_allowlist,
    subscribeAllowlist: config.mqtt.subscribe_allowlist,
    timeoutMs: Math.min(config.mqtt.timeout_ms, config.script_timeout_ms),
  };
  return {
    read_file: { kind: "sync", fn: ([p]) => readFileBuiltin(readPolicy, p) },
    exec_cmd: { kind: "async", fn: ([cmd, args], signal) => execCmdBuiltin(execPolicy, cmd, args, signal) },
    pub_and_get: { kind: "async", fn: (args, signal) => pubAndGetBuiltin(mqttPolicy, args, signal) },
    statfs: { kind: "sync", fn: ([p]) => statfsBuiltin(p) },
    sleep: { kind: "async", fn: ([ms], signal) => sleepBuiltin(ms, signal) },
    memo_get: { kind: "sync", fn: ([key]) => memo.get(scriptName, key) },
    memo_set: { kind: "sync", fn: ([key, value]) => memo.set(scriptName, key, value) },
  };
}
