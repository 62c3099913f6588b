// Command results the server has not taken yet, kept in `results-outbox.json` in the state dir. The server
// hands a command out once (it is then `delivered`), so its result must reach the server even when the
// post fails (a web process dies mid-request, the network drops) or the agent restarts before it could
// post: the results are written here before they are posted and removed once the server has them.
import fs from "node:fs";
import path from "node:path";
import type { CommandResult } from "./commands/types.ts";
import { writeFileAtomic } from "./fs-atomic.ts";
import type { Logger } from "./logger.ts";

/** Most results kept; beyond it the oldest go (a server that refuses for days must not fill the disk). */
export const OUTBOX_MAX_RESULTS = 1000;

export function resultsOutboxPath(stateDir: string): string {
  return path.join(stateDir, "results-outbox.json");
}

function isResult(value: unknown): value is CommandResult {
  const r = value as CommandResult;
  return (
    typeof r === "object" &&
    r !== null &&
    typeof r.command_id === "string" &&
    (r.status === "OK" || r.status === "FAILED")
  );
}

export class ResultsOutbox {
  private readonly file: string;

  constructor(
    stateDir: string,
    private readonly logger: Logger,
  ) {
    this.file = resultsOutboxPath(stateDir);
  }

  /** The results waiting for the server; an unreadable file is set aside (logged) rather than trusted. */
  pending(): CommandResult[] {
    let text: string;
    try {
      text = fs.readFileSync(this.file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT")
        this.logger.warn({ err: (err as Error).message }, "cannot read the command results outbox");
      return [];
    }
    try {
      const parsed = JSON.parse(text) as unknown;
      if (Array.isArray(parsed) && parsed.every(isResult)) return parsed;
    } catch {}
    const aside = `${this.file}.corrupt-${Date.now()}`;
    fs.renameSync(this.file, aside);
    this.logger.warn({ file: aside }, "the command results outbox was not readable; set aside");
    return [];
  }

  /** Adds `fresh` to what is pending and keeps the whole list on disk; returns it. */
  add(fresh: CommandResult[]): CommandResult[] {
    const all = [...this.pending(), ...fresh];
    if (fresh.length === 0) return all;
    const dropped = all.length - OUTBOX_MAX_RESULTS;
    if (dropped > 0) {
      this.logger.warn({ dropped }, "command results outbox full; the oldest results are dropped");
      all.splice(0, dropped);
    }
    writeFileAtomic(this.file, JSON.stringify(all), { mode: 0o600 });
    return all;
  }

  clear(): void {
    fs.rmSync(this.file, { force: true });
  }
}
