/**
 * The least work a heartbeat needs on this machine, measured in the same run as the API: the HTTP
 * exchange of the same bodies with a bare server that only parses them (floor-server.ts), and the
 * heartbeat's two rows written the cheapest way PostgreSQL takes them, 100 a statement (the telemetry
 * row: the multi-row ceiling; the device row: ceilings.ts' `deviceRows`). Their CPU, summed, is what any
 * implementation spends per heartbeat with its load generator on the same cores, so `cores / floor`
 * bounds the rate of the API here, whatever its code.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import type { Ceiling } from "./ceilings";
import type { FleetLoad } from "./load";
import { cpuSeconds } from "./probes";

export interface HttpFloor {
  requestsPerSecond: number;
  /** CPU per request: the bare server's and the load generator's (this process). */
  cpuMsPerRequest: { server: number; client: number };
}

export interface Floor {
  http: HttpFloor;
  /** CPU per heartbeat of the floor's three parts and their sum, in ms. */
  cpuMsPerHeartbeat: { http: number; telemetryRow: number; deviceRow: number; total: number };
  /** What the machine's cores could do if each heartbeat cost only the floor. */
  maxRate: number;
}

/** The load's callers against the bare server for `durationS` after `warmupS`. */
export async function measureHttpFloor(
  load: FleetLoad,
  { concurrency, durationS, warmupS }: { concurrency: number; durationS: number; warmupS: number },
): Promise<HttpFloor> {
  const child = spawn(process.execPath, [path.join(import.meta.dir, "floor-server.ts")], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (code) => reject(new Error(`the floor's server exited (${code})`)));
      child.stdout!.once("data", (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    });
    let measuring = false;
    let stop = false;
    let answered = 0;
    let failed = 0;
    const callers = load.callers(
      concurrency,
      `http://127.0.0.1:${port}`,
      () => stop,
      (status) => {
        if (status !== 200) failed++;
        else if (measuring) answered++;
      },
    );
    await Bun.sleep(warmupS * 1000);
    const serverBefore = cpuSeconds(child.pid!);
    const clientBefore = process.cpuUsage();
    const started = performance.now();
    measuring = true;
    await Bun.sleep(durationS * 1000);
    measuring = false;
    const elapsedS = (performance.now() - started) / 1000;
    const client = process.cpuUsage(clientBefore);
    const server = cpuSeconds(child.pid!) - serverBefore;
    stop = true;
    await callers;
    if (failed > 0) throw new Error(`the floor's server failed ${failed} requests`);
    return {
      requestsPerSecond: answered / elapsedS,
      cpuMsPerRequest: {
        server: (1000 * server) / answered,
        client: (client.user + client.system) / 1000 / answered,
      },
    };
  } finally {
    child.kill("SIGKILL");
  }
}

/** The floor's parts summed, and the rate they allow on `cores`. */
export function heartbeatFloor(
  http: HttpFloor,
  telemetryRows: Ceiling,
  deviceRows: Ceiling,
  cores: number,
): Floor {
  const sum = ({ postgres, client }: { postgres: number; client: number }) => postgres + client;
  const parts = {
    http: http.cpuMsPerRequest.server + http.cpuMsPerRequest.client,
    telemetryRow: sum(telemetryRows.cpuMsPerRow),
    deviceRow: sum(deviceRows.cpuMsPerRow),
  };
  const total = parts.http + parts.telemetryRow + parts.deviceRow;
  return { http, cpuMsPerHeartbeat: { ...parts, total }, maxRate: (1000 * cores) / total };
}
