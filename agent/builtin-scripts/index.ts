import fs from "node:fs";
import path from "node:path";
import { parseScript } from "../../shared/scripts/frontmatter.ts";
import { writeFileAtomic } from "../fs-atomic.ts";
import type { ScriptStore } from "../scripts/store.ts";
import cpu from "./cpu.outpost.js" with { type: "text" };
import disk from "./disk.outpost.js" with { type: "text" };
import load from "./load.outpost.js" with { type: "text" };
import memory from "./memory.outpost.js" with { type: "text" };
import network from "./network.outpost.js" with { type: "text" };
import uptime from "./uptime.outpost.js" with { type: "text" };

/** Source text of the scripts shipped inside the agent binary. */
export const BUILTIN_SCRIPT_SOURCES: string[] = [load, cpu, memory, disk, uptime, network];

const MARKER = ".builtin-scripts.json";

/**
 * Install the built-in scripts into the store the first time the agent runs, so a fresh device reports
 * telemetry immediately. A marker file remembers which built-in versions were installed: a built-in the
 * operator removed is not reinstalled, and a newer shipped version upgrades an older shipped one.
 */
export function ensureBuiltinScripts(store: ScriptStore): string[] {
  const markerPath = path.join(store.dir, MARKER);
  let marker: Record<string, number> = {};
  try {
    marker = JSON.parse(fs.readFileSync(markerPath, "utf8")) as Record<string, number>;
  } catch {
    marker = {};
  }
  const installed: string[] = [];
  let changed = false;
  const present = store.list();
  for (const source of BUILTIN_SCRIPT_SOURCES) {
    const { name, version } = parseScript(source).meta;
    const shipped = marker[name];
    const current = present
      .filter((s) => s.meta.name === name)
      .reduce((max, s) => Math.max(max, s.meta.version), -1);
    const wasRemoved = shipped !== undefined && current < 0;
    if (wasRemoved || current >= version) {
      if (shipped === undefined || shipped < version) {
        marker[name] = Math.max(shipped ?? 0, current >= version ? version : (shipped ?? 0));
        changed = true;
      }
      continue;
    }
    store.install(source);
    marker[name] = version;
    installed.push(name);
    changed = true;
  }
  if (changed) writeFileAtomic(markerPath, `${JSON.stringify(marker)}\n`, { mode: 0o644, dirMode: 0o750 });
  return installed;
}
