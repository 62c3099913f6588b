/**
 * The load of bench:heartbeat: simulated callers posting heartbeats of a fleet's devices, each device
 * in turn, over keep-alive connections.
 */
import type { heartbeatBodyText } from "./body";
import { KeepAliveConnection } from "./http-client";

export interface BenchDevice {
  id: string;
  mac: string;
  token: string;
}

/** What one answer was: its status, or undefined for a network error. */
export type RecordAnswer = (status: number | undefined, ms: number) => void;

/** The fleet visited in turn by every caller: each heartbeat goes to the next device. */
export class FleetLoad {
  private next = 0;

  constructor(
    private readonly devices: BenchDevice[],
    private readonly bodyText: ReturnType<typeof heartbeatBodyText>,
  ) {}

  /**
   * One simulated caller: heartbeats of the next device in turn to `target` until `done()`, on one
   * keep-alive connection (a new one after a network error).
   */
  async caller(target: string, done: () => boolean, record: RecordAnswer, pace?: Pacer): Promise<void> {
    let connection: KeepAliveConnection | undefined;
    while (!done()) {
      // Paced, a heartbeat's time counts from when it was due (a late send is the server's delay too).
      const started = pace ? await pace.turn() : performance.now();
      const device = this.devices[this.next++ % this.devices.length]!;
      const body = this.bodyText(device.mac, this.next);
      try {
        connection ??= await KeepAliveConnection.open(target);
        const answer = await connection.post(
          `/api/v1/devices/${device.id}/heartbeat?api_key=${device.token}`,
          body,
        );
        record(answer.status, performance.now() - started);
      } catch {
        connection = undefined;
        record(undefined, 0);
      }
    }
    connection?.close();
  }

  /**
   * `count` callers until `done()`, as fast as they can or at `pace`, spread evenly over `targets` (one
   * or several servers); resolves when all have stopped.
   */
  async callers(
    count: number,
    targets: string | string[],
    done: () => boolean,
    record: RecordAnswer,
    pace?: Pacer,
  ): Promise<void> {
    const spread = typeof targets === "string" ? [targets] : targets;
    await Promise.all(
      Array.from({ length: count }, (_, i) => this.caller(spread[i % spread.length]!, done, record, pace)),
    );
  }
}

/**
 * A fleet's steady rate: the k-th heartbeat is due k / rate seconds after the start, whichever caller
 * sends it. A caller behind schedule sends at once, so a slow server is offered the same rate (up to
 * the callers' number in flight).
 */
export class Pacer {
  private issued = 0;
  private readonly startedAt = performance.now();

  constructor(private readonly perSecond: number) {}

  /** Waits for the next heartbeat's moment; returns it (performance.now() time). */
  async turn(): Promise<number> {
    const dueAt = this.startedAt + (this.issued++ * 1000) / this.perSecond;
    const wait = dueAt - performance.now();
    if (wait > 1) await Bun.sleep(wait);
    return dueAt;
  }
}

/**
 * Devices poll at independent moments, so consecutive heartbeats touch unrelated rows: Fisher-Yates
 * with a fixed seed (mulberry32), the same order on every run.
 */
export function shuffle<T>(items: T[]) {
  let seed = 0x9e3779b9;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}
