import os from "node:os";
import type ssh2 from "ssh2";
import type { ClientChannel } from "ssh2";
import type { Clock, ClockTimer } from "../../shared/clock";
import type { Sql } from "../platform/database";
import type { Logger } from "../platform/logger";
import { type EndReason, endReasonText, MESSAGES, type TerminalLimits } from "./model";
import { Recorder } from "./recording";
import { endSession, type PrincipalKind, stopReason } from "./service";

/** How often a running session checks whether it was ended elsewhere, lost its lease or its operator. */
const WATCH_MS = 2000;
/** Timers tick this often. */
const TICK_MS = 500;

export interface TerminalEvents {
  /** `stderr`: a command's standard error (without a pty; a pty's shell writes all to `output`). */
  output(data: string, stream?: "stderr"): void;
  warning(message: string): void;
  /** `label`: the reason's words (the status line shows them); `exitStatus` when the shell exited. */
  ended(reason: EndReason, label: string, message: string, exitStatus?: number): void;
}

/**
 * One connected terminal: moves bytes between the browser and the SSH channel, records them, enforces
 * the idle and hard limits (reference §6.10) and ends the session exactly once, whatever ends it.
 */
export class TerminalRun {
  private readonly decoder = new TextDecoder("utf-8");
  /** The recording is text: bytes of input are recorded as UTF-8 (a character split across frames kept whole). */
  private readonly inputDecoder = new TextDecoder("utf-8");
  private readonly recorder: Recorder;
  private readonly startedAt: number;
  private lastInputAt: number;
  private warned = false;
  private finished = false;
  private readonly timers: ClockTimer[] = [];

  constructor(
    private readonly options: {
      sql: Sql;
      logger: Logger;
      /** The idle and hard limits run on it (tests move it on). */
      clock: Clock;
      sessionId: string;
      client: ssh2.Client;
      stream: ClientChannel;
      limits: TerminalLimits;
      /** The key expires on the device then: the session ends before. */
      expiresAt: Date;
      recordsInput: boolean;
      columns: number;
      rows: number;
      title: string;
      /** Whether a shell's exit is written to the screen (the browser's); the CLI exits with the status instead. */
      announceExit?: boolean;
      events: TerminalEvents;
      operatorActive(operatorId: string, kind: PrincipalKind): Promise<boolean>;
    },
  ) {
    this.startedAt = options.clock.now();
    this.lastInputAt = this.startedAt;
    this.recorder = new Recorder(
      options.sql,
      options.sessionId,
      {
        columns: options.columns,
        rows: options.rows,
        title: options.title,
        recordsInput: options.recordsInput,
      },
      options.logger,
    );
    options.stream.on("data", (chunk: Buffer) => this.output(this.decoder.decode(chunk, { stream: true })));
    options.stream.stderr.on("data", (chunk: Buffer) => this.output(chunk.toString("utf8"), "stderr"));
    let exitStatus: number | undefined;
    const onExit = (code: number | null | undefined, signal?: string) => {
      // A shell killed by a signal (`kill -9 $$`) exited too, with the status a shell reports for it
      // (128 + the signal's number); it was recorded as a lost connection before.
      // ssh2 names it as `SIGKILL` (the protocol says `KILL`).
      const signalNumber = signal
        ? os.constants.signals[signal.replace(/^(SIG)?/, "SIG") as NodeJS.Signals]
        : undefined;
      exitStatus = typeof code === "number" ? code : signalNumber ? 128 + signalNumber : undefined;
    };
    options.stream.on("exit", onExit);
    // A command (`outpost ssh <device> -- true`) may exit while the session is being set up (the host
    // key pinned, the session marked connected), before this listens: ssh2 keeps what sshd said. Missed,
    // about one quick command in five ended as "Connection to the device lost".
    const early = (options.stream as unknown as { _exit?: { code?: number | null; signal?: string } })._exit;
    if (early && (early.code !== undefined || early.signal !== undefined)) onExit(early.code, early.signal);
    // A shell that exits says so; a connection that just drops was cut (the lease ended and the device
    // closed its tunnel, the device went away): find out why before saying.
    const closed = () =>
      exitStatus !== undefined
        ? void this.finish("exit", MESSAGES.exit(exitStatus), exitStatus)
        : void this.lost();
    options.stream.on("close", closed);
    options.client.on("error", () => void this.lost());
    options.client.on("close", closed);
    this.timers.push(options.clock.setInterval(() => this.tick(), TICK_MS));
    this.timers.push(options.clock.setInterval(() => void this.watch(), WATCH_MS));
  }

  private output(data: string, stream?: "stderr") {
    if (this.finished || data === "") return;
    this.recorder.output(data);
    this.options.events.output(data, stream);
  }

  /** Text (the browser's keys) or bytes (the CLI's stdin), written to the channel as they are. */
  input(data: string | Buffer) {
    if (this.finished) return;
    this.lastInputAt = this.options.clock.now();
    this.warned = false;
    if (this.options.recordsInput)
      this.recorder.input(typeof data === "string" ? data : this.inputDecoder.decode(data, { stream: true }));
    this.options.stream.write(data);
  }

  /** The input ended: the command (or shell) reads end of file. */
  eof() {
    // After the input written before it (an EOF sent ahead of queued data would cut the data off).
    if (!this.finished) this.options.stream.end();
  }

  resize(columns: number, rows: number) {
    if (this.finished) return;
    this.options.stream.setWindow(rows, columns, 0, 0);
    this.recorder.resize(columns, rows);
  }

  /** Seconds of warning before the idle cut: 30, or half the idle limit when that is shorter. */
  private get warningSeconds() {
    return Math.min(30, Math.floor(this.options.limits.idleSeconds / 2));
  }

  private tick() {
    const now = this.options.clock.now();
    const { idleSeconds, maxSeconds } = this.options.limits;
    if (now - this.startedAt >= maxSeconds * 1000 || now >= this.options.expiresAt.getTime()) {
      void this.finish("max_duration", MESSAGES.maxDuration(maxSeconds));
      return;
    }
    const idleMs = now - this.lastInputAt;
    if (idleMs >= idleSeconds * 1000) {
      void this.finish("idle", MESSAGES.idle);
      return;
    }
    const warning = this.warningSeconds;
    if (!this.warned && warning > 0 && idleMs >= (idleSeconds - warning) * 1000) {
      this.warned = true;
      this.output(MESSAGES.idleWarningLine(warning));
      this.options.events.warning(MESSAGES.idleWarning(warning));
    }
  }

  /** Ends the session if it was ended elsewhere, lost its lease or its operator; true when it did. */
  private async watch(): Promise<boolean> {
    if (this.finished) return true;
    const reason = await stopReason(
      this.options.sql,
      this.options.sessionId,
      this.options.operatorActive,
    ).catch(() => undefined);
    if (reason === "already_ended") void this.finish("ended_by_operator", MESSAGES.closedElsewhere);
    else if (reason === "lease_ended") void this.finish("lease_ended", MESSAGES.leaseEnded);
    else if (reason === "operator_disabled") void this.finish("operator_disabled", MESSAGES.operatorDisabled);
    return reason !== undefined;
  }

  private async lost() {
    if (this.finished || (await this.watch())) return;
    void this.finish("lost", MESSAGES.connectionLost);
  }

  /** The operator pressed End session. */
  end() {
    void this.finish("ended", "");
  }

  /** The browser went away (page closed, socket dropped). */
  close() {
    void this.finish("closed", "");
  }

  private async finish(reason: EndReason, message: string, exitStatus?: number) {
    if (this.finished) return;
    if (message) {
      this.recorder.output(message);
      if (reason !== "exit" || this.options.announceExit !== false) this.options.events.output(message);
    }
    this.finished = true;
    for (const timer of this.timers) timer.clear();
    this.options.stream.removeAllListeners("close");
    this.options.client.removeAllListeners("close");
    this.options.client.end();
    // Recorded and stored before the browser hears of the end: what it then shows (the recording, the
    // session's end reason) is complete.
    await this.recorder.close();
    await endSession(this.options.sql, this.options.sessionId, reason, exitStatus).catch((error) =>
      this.options.logger.error(
        { err: error, sessionId: this.options.sessionId },
        "ending a terminal session failed",
      ),
    );
    this.options.events.ended(
      reason,
      endReasonText(reason, exitStatus),
      message.trim().replace(/^\[|\]$/g, ""),
      exitStatus,
    );
  }
}
