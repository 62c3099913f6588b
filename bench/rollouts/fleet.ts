/**
 * The simulated fleet of bench:rollout: the heartbeat bench's seeded devices (bench/heartbeat/seed.ts)
 * polling over keep-alive connections (bench/heartbeat/http-client.ts) with the agent's heartbeat body.
 * A device whose reply carries commands runs them with the agent's own executor
 * (agent/commands/executor.ts: the install_script handler into a real script store) and posts the
 * results the agent builds, as the agent does (`POST /api/v1/devices/:id/command_results` with
 * `{results}`). A device that answered stops polling: the rest keep taking turns.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { executeCommands } from "../../agent/commands/executor";
import type { CommandContext, ServerCommand } from "../../agent/commands/types";
import { defaultConfig } from "../../agent/config";
import { silentLogger } from "../../agent/logger";
import { ScriptStore } from "../../agent/scripts/store";
import type { heartbeatBodyText } from "../heartbeat/body";
import { KeepAliveConnection } from "../heartbeat/http-client";
import type { BenchDevice } from "../heartbeat/load";

export interface FleetCounts {
  heartbeats: number;
  /** Commands that reached a device in a heartbeat reply. */
  delivered: number;
  /** Results the server took (202). */
  results: number;
  errors: number;
  firstDeliveredAt: number | undefined;
  lastDeliveredAt: number | undefined;
  firstResultAt: number | undefined;
  lastResultAt: number | undefined;
}

export class AnsweringFleet {
  readonly counts: FleetCounts = {
    heartbeats: 0,
    delivered: 0,
    results: 0,
    errors: 0,
    firstDeliveredAt: undefined,
    lastDeliveredAt: undefined,
    firstResultAt: undefined,
    lastResultAt: undefined,
  };
  private turn: BenchDevice[];
  private next = 0;
  private readonly answered = new Set<string>();
  private readonly dir = mkdtempSync(path.join(tmpdir(), "outpost-bench-rollout-agents-"));

  constructor(
    devices: BenchDevice[],
    private readonly bodyText: ReturnType<typeof heartbeatBodyText>,
  ) {
    this.turn = [...devices];
  }

  /** The next device still to answer, in turn; undefined once every device answered. */
  private nextDevice(): BenchDevice | undefined {
    for (;;) {
      if (this.next >= this.turn.length) {
        this.turn = this.turn.filter((d) => !this.answered.has(d.id));
        this.next = 0;
        if (this.turn.length === 0) return undefined;
      }
      const device = this.turn[this.next++]!;
      if (!this.answered.has(device.id)) return device;
    }
  }

  /** One agent's command context: its own state directory (a caller plays one device at a time). */
  private agent(n: number): CommandContext {
    const config = defaultConfig(path.join(this.dir, String(n)));
    return { config, store: new ScriptStore(config.scripts_dir), logger: silentLogger() };
  }

  /** `count` callers polling until `done()` or every device answered. */
  async run(count: number, target: string, done: () => boolean): Promise<void> {
    await Promise.all(Array.from({ length: count }, (_, i) => this.caller(i, target, done)));
  }

  private async caller(n: number, target: string, done: () => boolean): Promise<void> {
    const agent = this.agent(n);
    let connection: KeepAliveConnection | undefined;
    let uptime = 0;
    while (!done()) {
      const device = this.nextDevice();
      if (!device) break;
      try {
        connection ??= await KeepAliveConnection.open(target);
        const reply = await connection.post(
          `/api/v1/devices/${device.id}/heartbeat?api_key=${device.token}`,
          this.bodyText(device.mac, ++uptime),
        );
        this.counts.heartbeats++;
        if (reply.status !== 200) {
          this.counts.errors++;
          continue;
        }
        const commands = (JSON.parse(reply.body) as { data: { commands: ServerCommand[] } }).data.commands;
        if (commands.length === 0) continue;
        const at = performance.now();
        this.counts.delivered += commands.length;
        this.counts.firstDeliveredAt ??= at;
        this.counts.lastDeliveredAt = at;
        const results = await executeCommands(commands, agent);
        const posted = await connection.post(
          `/api/v1/devices/${device.id}/command_results?api_key=${device.token}`,
          JSON.stringify({ results }),
        );
        if (posted.status !== 202) {
          this.counts.errors++;
          continue;
        }
        const done = performance.now();
        this.counts.results += results.length;
        this.counts.firstResultAt ??= done;
        this.counts.lastResultAt = done;
        this.answered.add(device.id);
        // The next device this caller plays is a fresh one: nothing installed yet.
        for (const script of agent.store.list()) agent.store.remove(script.meta.name);
      } catch {
        connection = undefined;
        this.counts.errors++;
      }
    }
    connection?.close();
  }

  close() {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
