import { type Static, Type } from "@sinclair/typebox";
import { ButtonForm, ConsoleForm, compileSchema, FormText, literalUnion } from "../platform/schemas";

/** TERMINAL_IDLE_SECONDS and TERMINAL_MAX_SECONDS. */
export interface TerminalLimits {
  idleSeconds: number;
  maxSeconds: number;
}

/**
 * A refused join, as the reference's `{reason, code}` pairs (§6.8): `session_not_found`,
 * `session_expired`, `unauthorized/device_mismatch`, `authorization_timeout/ssh_authorization_timeout`, ….
 */
export class JoinError extends Error {
  constructor(
    readonly reason: string,
    readonly code: string,
    detail?: string,
  ) {
    super(detail ?? code);
    this.name = "JoinError";
  }
}

const Size = Type.Union([
  Type.Integer({ minimum: 1, maximum: 1000 }),
  Type.String({ pattern: "^[1-9][0-9]{0,3}$" }),
]);

/** Browser → server frames on `/socket` (JSON text). */
export const JoinFrame = Type.Object({
  event: Type.Literal("join"),
  topic: Type.String({ maxLength: 100 }),
  payload: Type.Object({
    session_ref: Type.Optional(Type.String({ maxLength: 200 })),
    /** The reference's name for the ref. */
    token: Type.Optional(Type.String({ maxLength: 200 })),
    command_id: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
    columns: Type.Optional(Size),
    rows: Type.Optional(Size),
    /** `outpost ssh <device> -- <command>`: run this instead of a login shell. */
    command: Type.Optional(Type.String({ minLength: 1, maxLength: 8192 })),
    /** With a command: whether it gets a pty (the CLI's stdin is a terminal). */
    pty: Type.Optional(Type.Boolean()),
  }),
});
export const InputFrame = Type.Object({
  event: Type.Literal("input"),
  payload: Type.Union([
    /** Text: the browser's keys. */
    Type.Object({ data: Type.String({ maxLength: 65536 }) }, { additionalProperties: false }),
    /** Bytes, any of them (the CLI's stdin): 48 KiB at most per frame. */
    Type.Object(
      {
        data: Type.String({ maxLength: 65536, pattern: "^[A-Za-z0-9+/]*={0,2}$" }),
        encoding: Type.Literal("base64"),
      },
      { additionalProperties: false },
    ),
  ]),
});
export const ResizeFrame = Type.Object({
  event: Type.Literal("resize"),
  payload: Type.Object({ columns: Size, rows: Size }),
});
export const LeaveFrame = Type.Object({ event: Type.Literal("leave") });
/** The end of the input (a command's stdin reached its end: the command reads EOF). */
export const EofFrame = Type.Object({ event: Type.Literal("eof") });
export const ClientFrame = Type.Union([JoinFrame, InputFrame, ResizeFrame, LeaveFrame, EofFrame]);
export type ClientFrame = Static<typeof ClientFrame>;
export const clientFrame = compileSchema(ClientFrame);

/** `80`, `"80"` → 80; anything else → the fallback. */
export function sizeOf(value: unknown, fallback: number): number {
  const n = typeof value === "string" ? Number(value) : value;
  return typeof n === "number" && Number.isInteger(n) && n >= 1 && n <= 1000 ? n : fallback;
}

/** `60m` for whole minutes, else `45s` (the time-limit message). */
export function durationLabel(seconds: number): string {
  return seconds % 60 === 0 ? `${seconds / 60}m` : `${seconds}s`;
}

/** Reference §6.10 messages, written to the terminal (and the recording). */
export const MESSAGES = {
  idleWarning: (s: number) => `Session idle. Disconnecting in ${s} seconds. Press any key to stay connected.`,
  idleWarningLine: (s: number) => `\r\n[Session idle. Disconnecting in ${s}s...]\r\n`,
  idle: "\r\n[Session timed out due to inactivity.]\r\n",
  maxDuration: (s: number) => `\r\n[Session time limit reached (${durationLabel(s)}). Disconnecting...]\r\n`,
  exit: (status: number) => `\r\n[Session ended with status: ${status}]\r\n`,
  closedElsewhere: "\r\n[Session ended by an operator.]\r\n",
  leaseEnded: "\r\n[Remote access to this device ended.]\r\n",
  operatorDisabled: "\r\n[Your account was disabled.]\r\n",
  replaced: "\r\n[A new session replaced this one.]\r\n",
  connectionLost: "\r\n[Connection to the device lost.]\r\n",
};

/**
 * Why a session ended: `exit` (the shell exited), `idle`, `max_duration`, `ended` (End session on its
 * page), `closed` (its page went away), `replaced` (a new session of the same operator), `ended_by_operator`
 * (End this session on the sessions page, or ended by another process), `lease_ended`, `operator_disabled`,
 * `lost` (the connection to the device dropped), `failed` (it never connected), `expired` (never joined).
 */
export type EndReason =
  | "exit"
  | "idle"
  | "max_duration"
  | "ended"
  | "closed"
  | "replaced"
  | "operator_disabled"
  | "lease_ended"
  | "ended_by_operator"
  | "lost"
  | "failed"
  | "expired";

/** Human text of each end reason (the terminal's status line, the sessions list, playback). */
export const END_REASONS: Record<EndReason, string> = {
  exit: "Shell exited",
  idle: "Idle timeout",
  max_duration: "Time limit reached",
  ended: "Ended with End session",
  closed: "Page closed",
  replaced: "Replaced by a new session",
  operator_disabled: "Operator disabled",
  lease_ended: "Remote access ended",
  ended_by_operator: "Ended by an operator",
  lost: "Connection to the device lost",
  failed: "Could not connect",
  expired: "Never joined",
};

/** The words for a session's end: `Shell exited (status 3)`; a code no version knows stays as it is. */
export function endReasonText(reason: string | null, exitStatus?: number | null): string {
  const label = END_REASONS[(reason ?? "") as EndReason] ?? reason ?? "Ended";
  return reason === "exit" && exitStatus !== null && exitStatus !== undefined
    ? `${label} (status ${exitStatus})`
    : label;
}

/** A console path holding a device id, or a terminal session id. */
export const IdParams = Type.Object({ id: Type.String({ description: "The device's or session's id" }) });

/** Open a terminal, end a session, accept a reported host key: buttons. */
export const TerminalButtonForm = ButtonForm;

/** The terminal settings: whether new sessions record keyboard input. */
export const TerminalSettingsForm = ConsoleForm({
  record_input: literalUnion(["on", "off"], { message: "must be on or off" }),
});

/** The sessions list's filters and page. */
export const SessionsQuery = Type.Object(
  {
    device: Type.Optional(FormText(100)),
    operator: Type.Optional(FormText(1000)),
    before: Type.Optional(FormText(1000)),
  },
  { additionalProperties: true },
);

/** `POST /api/v1/devices/{device_id}/terminal` → 201: what a client joins `/socket` with (docs/cli.md). */
export const TerminalSessionReply = Type.Object({
  data: Type.Object({
    session_id: Type.String({ format: "uuid" }),
    session_ref: Type.String({ description: "Opaque; the join frame's `session_ref` (joins once)" }),
    command_id: Type.String({ format: "uuid", description: "The device's `ssh_authorize` command" }),
    socket_token: Type.String({ description: "`/socket?token=…`, valid one hour, for this token only" }),
    topic: Type.String({ description: "`terminal:<device_id>`, the join frame's topic" }),
  }),
});
