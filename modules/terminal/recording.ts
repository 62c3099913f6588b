import { gunzipSync, gzipSync } from "node:zlib";
import type { Sql } from "../platform/database";
import { isUuid } from "../platform/json-body";
import type { Logger } from "../platform/logger";

/** A chunk is written at least this often while output flows (a crash loses at most this much). */
const FLUSH_MS = 3000;
/** …or when this much asciicast text is waiting. */
const FLUSH_BYTES = 64 * 1024;
/** A recording stops growing here (a runaway `cat /dev/urandom` must not fill the database). */
export const RECORDING_MAX_BYTES = 64 * 1024 * 1024;
/** A chunk whose write failed (a failover, a full pool) is tried again after these pauses, then given up. */
export const CHUNK_RETRY_MS = [250, 1000, 4000];

/**
 * Records one session as asciicast v2 (https://docs.asciinema.org/manual/asciicast/v2/): a header line,
 * then `[seconds, "o" | "i" | "r", data]` events. Written in gzip chunks while the session runs.
 */
export class Recorder {
  private readonly started = performance.now();
  private pending: string[] = [];
  private pendingBytes = 0;
  private total = 0;
  private seq = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  private writing: Promise<void> = Promise.resolve();
  private truncated = false;

  constructor(
    private readonly sql: Sql,
    private readonly sessionId: string,
    header: { columns: number; rows: number; title: string; recordsInput: boolean },
    private readonly logger?: Logger,
  ) {
    this.push(
      `${JSON.stringify({
        version: 2,
        width: header.columns,
        height: header.rows,
        timestamp: Math.floor(Date.now() / 1000),
        title: header.title,
        env: { TERM: "xterm-256color", SHELL: "/bin/sh" },
      })}\n`,
    );
    this.timer = setInterval(() => this.flush(), FLUSH_MS);
  }

  output(data: string) {
    this.event("o", data);
  }

  input(data: string) {
    this.event("i", data);
  }

  resize(columns: number, rows: number) {
    this.event("r", `${columns}x${rows}`);
  }

  private event(kind: "o" | "i" | "r", data: string) {
    if (this.truncated) return;
    const seconds = Math.round(performance.now() - this.started) / 1000;
    this.push(`${JSON.stringify([seconds, kind, data])}\n`);
  }

  private push(line: string) {
    const bytes = Buffer.byteLength(line);
    if (this.total + bytes > RECORDING_MAX_BYTES) {
      this.truncated = true;
      const seconds = Math.round(performance.now() - this.started) / 1000;
      line = `${JSON.stringify([seconds, "o", "\r\n[Recording stopped: size limit reached]\r\n"])}\n`;
    }
    this.pending.push(line);
    this.pendingBytes += Buffer.byteLength(line);
    this.total += Buffer.byteLength(line);
    if (this.pendingBytes >= FLUSH_BYTES) this.flush();
  }

  /** Writes what is pending as one chunk (chunks are written in order, one at a time). */
  flush(): Promise<void> {
    if (this.pending.length === 0) return this.writing;
    const text = this.pending.join("");
    this.pending = [];
    this.pendingBytes = 0;
    const seq = this.seq++;
    const raw = Buffer.byteLength(text);
    // One chunk at a time and in order: a chunk that cannot be written holds the later ones back while
    // it is tried again, so a recording loses a chunk only when the database stays away for seconds.
    this.writing = this.writing.then(async () => {
      const data = gzipSync(text);
      for (let attempt = 0; ; attempt++) {
        try {
          await this.sql.begin(async (tx) => {
            await tx`insert into terminal_recording_chunks (session_id, seq, data)
            values (${this.sessionId}::uuid, ${seq}, ${data})`;
            await tx`update terminal_sessions set recording_bytes = recording_bytes + ${raw},
              stored_bytes = stored_bytes + ${data.length}
            where id = ${this.sessionId}::uuid`;
          });
          return;
        } catch (error) {
          const pause = CHUNK_RETRY_MS[attempt];
          if (pause === undefined) {
            // Playback joins the chunks it has: the gap shows as a jump in the recording.
            this.logger?.warn(
              { session_id: this.sessionId, seq, bytes: raw, error: (error as Error).message },
              "terminal recording: a chunk could not be stored and is left out",
            );
            return;
          }
          await Bun.sleep(pause);
        }
      }
    });
    return this.writing;
  }

  /** Flushes the rest and stops the timer. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}

/** The whole recording as asciicast v2 text (undefined when the session has none). */
export async function readRecording(sql: Sql, sessionId: string): Promise<string | undefined> {
  if (!isUuid(sessionId)) return undefined;
  const chunks = await sql<{ data: Buffer }[]>`select data from terminal_recording_chunks
    where session_id = ${sessionId}::uuid order by seq`;
  if (chunks.length === 0) return undefined;
  return chunks.map((c) => gunzipSync(c.data).toString("utf8")).join("");
}

/** Deletes sessions (and their recordings) that ended more than `days` ago; returns how many. */
export async function pruneRecordings(sql: Sql, days: number): Promise<number> {
  let deleted = 0;
  for (;;) {
    const batch = await sql`delete from terminal_sessions where id in (
        select id from terminal_sessions where ended_at < now() - make_interval(days => ${days}) limit 500)`;
    deleted += batch.count;
    if (batch.count < 500) return deleted;
  }
}
