import { Elysia } from "elysia";
import { recordAudit } from "../audit/service";
import { apiTokenIsActive, operatorIsActive } from "../operators/service";
import { type Principal, principalLabel } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import type { MuxRoute } from "./bridge";
import { openShell } from "./bridge";
import { pinOnConnect } from "./host-keys";
import { type ClientFrame, clientFrame, JoinError, sizeOf, type TerminalLimits } from "./model";
import { TerminalRun } from "./runner";
import { endSession, joinSession, markConnected, type PrincipalKind, verifySocketToken } from "./service";

const TOPIC = /^terminal:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

type ConnectionState = "idle" | "joining" | "running" | "closed";

interface Connection {
  send(frame: unknown): void;
  close(): void;
  socket: { deviceId: string; operatorId: string };
  operatorId: string;
  kind: PrincipalKind;
  email: string;
  address: string | null;
  state: ConnectionState;
  run?: TerminalRun;
  sessionId?: string;
}

/**
 * Who a socket's principal opens sessions as: an operator by their id, an API token (`outpost ssh`) by its
 * own id (terminal sessions name it in `operator_id`, with `principal_kind` token).
 */
function sessionPrincipal(principal: Principal | undefined): { id: string; kind: PrincipalKind } | undefined {
  if (principal?.kind === "session") return { id: principal.operatorId, kind: "operator" };
  if (principal?.kind === "token") return { id: principal.tokenId, kind: "token" };
  return undefined;
}

/** A browser's `Origin` must be this server (a WebSocket is not covered by CORS: cross-site hijacking). */
function sameOrigin(request: Request): boolean {
  const origin = request.headers.get("origin");
  if (!origin) return false;
  try {
    return (
      new URL(origin).host === new URL(request.url).host ||
      new URL(origin).host === request.headers.get("host")
    );
  } catch {
    return false;
  }
}

/**
 * The realtime socket (`/socket?token=<socket token>`): an operator's session plus a socket token signed
 * for them; one terminal join per connection. Frames are JSON `{event, topic?, payload}` (docs/terminal.md).
 */
export function terminalSocketRoutes(ctx: AppContext, limits: TerminalLimits, mux: () => MuxRoute) {
  const { config, database, logger } = ctx;
  const sql = database.sql;
  const connections = new Map<string, Connection>();
  const operatorActive = (id: string, kind: PrincipalKind) =>
    kind === "token" ? apiTokenIsActive(database.db, id) : operatorIsActive(database.db, id);

  async function join(connection: Connection, frame: Extract<ClientFrame, { event: "join" }>) {
    const topicDevice = TOPIC.exec(frame.topic)?.[1];
    if (!topicDevice) {
      connection.send({ event: "join_error", payload: { reason: "unauthorized", code: "invalid_topic" } });
      return;
    }
    connection.state = "joining";
    // The socket's close handler may set "closed" while this join awaits.
    const closed = () => (connection.state as ConnectionState) === "closed";
    const columns = sizeOf(frame.payload.columns, 80);
    const rows = sizeOf(frame.payload.rows, 24);
    let sessionId: string | undefined;
    try {
      connection.send({ event: "status", payload: { state: "authorizing" } });
      const joined = await joinSession(sql, {
        secretKey: config.secretKey,
        topicDeviceId: topicDevice,
        socket: connection.socket,
        operatorId: connection.operatorId,
        sessionRef: frame.payload.session_ref ?? frame.payload.token,
        commandId: frame.payload.command_id,
      });
      sessionId = joined.sessionId;
      connection.sessionId = sessionId;
      if (closed()) throw new JoinError("closed", "closed");
      connection.send({ event: "status", payload: { state: "connecting" } });
      const shell = await openShell(mux(), {
        secretKey: config.secretKey,
        baseDomain: config.baseDomain,
        deviceId: joined.deviceId,
        username: joined.username,
        privateKey: joined.privateKey,
        hostKey: joined.hostKey,
        columns,
        rows,
        command: frame.payload.command,
        pty: frame.payload.pty,
      });
      if (shell.firstSeenKey) {
        await pinOnConnect(
          sql,
          joined.deviceId,
          shell.firstSeenKey.publicKey,
          shell.firstSeenKey.fingerprint,
        );
      }
      if (closed()) {
        shell.client.end();
        throw new JoinError("closed", "closed");
      }
      await markConnected(sql, joined.sessionId);
      const audit = (action: string, details: Record<string, unknown>) =>
        recordAudit(database, {
          actorKind: connection.kind,
          actor: connection.email,
          action,
          target: `terminal_session:${joined.sessionId}`,
          status: 200,
          address: connection.address,
          details: { device_id: joined.deviceId, ...details },
        }).catch((error) => logger.error({ err: error }, "auditing a terminal session failed"));
      void audit("terminal.connect", {
        user: joined.username,
        ...(frame.payload.command === undefined ? {} : { command: frame.payload.command }),
      });
      connection.state = "running";
      connection.run = new TerminalRun({
        sql,
        logger,
        clock: ctx.clock,
        sessionId: joined.sessionId,
        client: shell.client,
        stream: shell.stream,
        limits,
        expiresAt: joined.expiresAt,
        recordsInput: joined.recordsInput,
        columns,
        rows,
        title: `${joined.username}@dev-${joined.deviceId.replace(/-/g, "")}${frame.payload.command === undefined ? "" : `: ${frame.payload.command}`}`,
        operatorActive,
        // `outpost ssh` exits with the status, as ssh does, and prints nothing after the command's output.
        announceExit: connection.kind === "operator",
        events: {
          output: (data, stream) =>
            connection.send({ event: "output", payload: stream ? { data, stream } : { data } }),
          warning: (message) => connection.send({ event: "session_warning", payload: { message } }),
          ended: (reason, label, message, exitStatus) => {
            void audit("terminal.end", { reason });
            connection.send({
              event: "ended",
              payload: {
                reason,
                label,
                message,
                ...(exitStatus === undefined ? {} : { exit_status: exitStatus }),
              },
            });
            connection.close();
          },
        },
      });
      connection.send({ event: "joined", payload: { session_id: joined.sessionId } });
      connection.send({ event: "status", payload: { state: "connected" } });
    } catch (error) {
      if (sessionId) await endSession(sql, sessionId, closed() ? "closed" : "failed");
      if (!(error instanceof JoinError)) {
        logger.error({ err: error }, "terminal join failed");
        error = new JoinError("terminal_unavailable", "startup_failed");
      }
      const refused = error as JoinError;
      connection.send({
        event: "join_error",
        payload: { reason: refused.reason, code: refused.code, message: refused.message },
      });
      if (!closed()) connection.state = "idle";
    }
  }

  return new Elysia({ name: "terminal-socket" }).use(ctx.access).ws("/socket", {
    access: "operator",
    beforeHandle({ query, request, principal }) {
      // A browser brings its session cookie, so its page must be this site's; an API token is sent by
      // its holder's own program (`outpost ssh`), never by a browser on another site's behalf.
      if (principal?.kind === "session" && !sameOrigin(request))
        throw new AppError(403, "cross_origin", "The socket accepts this site's pages only");
      const socket = verifySocketToken(config.secretKey, query.token);
      if (!socket || socket.operatorId !== sessionPrincipal(principal)?.id) {
        throw new AppError(401, "invalid_socket_token", "The socket token is missing, expired or not yours");
      }
    },
    open(ws) {
      const principal = ws.data.principal;
      const who = sessionPrincipal(principal);
      const socket = verifySocketToken(config.secretKey, ws.data.query.token);
      if (!socket || !who) return ws.close(4001, "unauthorized");
      connections.set(ws.id, {
        socket,
        operatorId: who.id,
        kind: who.kind,
        email: principalLabel(principal)!,
        address: ws.remoteAddress ?? null,
        state: "idle",
        send: (frame) => {
          if (ws.readyState === 1) ws.send(JSON.stringify(frame));
        },
        close: () => ws.close(1000, "session ended"),
      });
    },
    message(ws, message) {
      const connection = connections.get(ws.id);
      if (!connection) return;
      const frame = typeof message === "string" ? safeJson(message) : message;
      if (!clientFrame.Check(frame)) {
        connection.send({
          event: "error",
          payload: { code: "invalid_frame", message: "Unknown or malformed frame" },
        });
        return;
      }
      switch (frame.event) {
        case "join":
          if (connection.state === "idle") void join(connection, frame);
          break;
        case "input":
          connection.run?.input(
            "encoding" in frame.payload ? Buffer.from(frame.payload.data, "base64") : frame.payload.data,
          );
          break;
        case "resize":
          connection.run?.resize(sizeOf(frame.payload.columns, 80), sizeOf(frame.payload.rows, 24));
          break;
        case "leave":
          connection.run?.end();
          break;
        case "eof":
          connection.run?.eof();
          break;
      }
    },
    close(ws) {
      const connection = connections.get(ws.id);
      connections.delete(ws.id);
      if (!connection) return;
      connection.state = "closed";
      connection.run?.close();
    },
  });
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
