import type net from "node:net";
import { Elysia } from "elysia";
import { noteAudit, recordAudit } from "../audit/service";
import type { Principal } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { readJsonBody } from "../platform/json-body";
import { DeviceParams, errorReplies, NoContent } from "../platform/schemas";
import { ForwardConnectQuery, ForwardReply, LeaseParams, OpenForwardBody } from "./model";
import { MuxError, type MuxRoute, tunnelSocket } from "./mux-client";
import { endLease, leaseIsActive, openLease, renewLease } from "./service";
import { tunnelState } from "./tunnel/state";

/** A forward's lease lapses this long after its last connection (the CLI may have vanished). */
export const FORWARD_LEASE_SECONDS = 600;
/** While a connection is open, its lease is renewed this often. */
const RENEW_MS = 60_000;

/** WebSocket close codes of a forwarded connection the device side refused (the CLI prints why). */
export const FORWARD_CLOSE: Record<string, number> = {
  port_not_forwardable: 4403,
  lease_not_found: 4404,
  device_not_connected: 4502,
  device_not_answering: 4504,
};

function requireToken(principal: Principal | undefined) {
  if (principal?.kind !== "token")
    throw new AppError(403, "token_required", "This endpoint takes an API token (Authorization: Bearer)");
  return principal;
}

const portNotForwardable = (port: number, forwards: string[]) => {
  const offered = forwards.filter((name) => name.startsWith("tcp:")).map((name) => name.slice(4));
  return new AppError(
    403,
    "port_not_forwardable",
    `The device does not forward port ${port} (its agent's tunnel.forward_ports: ${offered.length ? offered.join(", ") : "none"})`,
  );
};

interface Carried {
  socket?: net.Socket;
  leaseId: string;
  deviceId: string;
  port: number;
  actor: string;
  address: string | null;
  openedAt: number;
  toDevice: number;
  fromDevice: number;
  renew?: ReturnType<typeof setInterval>;
  closed: boolean;
  ended?: string;
}

/**
 * `outpost forward`: a lease that keeps the device's tunnel up (opened here, renewed by open
 * connections, ended by DELETE), and one WebSocket per forwarded TCP connection, carried through the
 * tunnel multiplexer to `127.0.0.1:<port>` on the device when its agent offers that port
 * (`tunnel.forward_ports`). Audited (open, close, each connection with its bytes), never recorded.
 */
export function forwardRoutes(ctx: AppContext, mux: () => MuxRoute) {
  const { config, database, logger } = ctx;
  const sql = database.sql;
  const connections = new Map<string, Carried>();

  function finish(carried: Carried, reason: string) {
    if (carried.closed) return;
    carried.closed = true;
    clearInterval(carried.renew);
    carried.socket?.destroy();
    void recordAudit(database, {
      actorKind: "token",
      actor: carried.actor,
      action: "forward.connection",
      target: `remote_access_lease:${carried.leaseId}`,
      status: 200,
      address: carried.address,
      details: {
        device_id: carried.deviceId,
        port: carried.port,
        bytes_to_device: carried.toDevice,
        bytes_from_device: carried.fromDevice,
        seconds: Math.round((Date.now() - carried.openedAt) / 1000),
        ended: reason,
      },
    }).catch((error) => logger.error({ err: error }, "auditing a forwarded connection failed"));
  }

  return new Elysia({ name: "remote-access-forwards" })
    .use(ctx.access)
    .post(
      "/api/v1/devices/:device_id/forwards",
      async ({ body, params, principal, set, request }) => {
        const token = requireToken(principal);
        // Refused early when the device's tunnel is up and says which ports it offers.
        const tunnel = await tunnelState(sql, params.device_id).catch(() => undefined);
        if (tunnel && body.port !== 22 && !tunnel.forwards.includes(`tcp:${body.port}`))
          throw portNotForwardable(body.port, tunnel.forwards);
        const settings = await ctx.settings.device();
        const lease = await openLease(sql, {
          deviceId: params.device_id,
          ownerKind: "api",
          apiTokenId: token.tokenId,
          holder: `token ${token.name} (forward to port ${body.port})`,
          ttlSeconds: FORWARD_LEASE_SECONDS,
          maxMinutes: config.remoteAccessMaxMinutes,
          onlineWindowSeconds: settings.onlineWindowSeconds,
        });
        noteAudit(request, {
          target: `remote_access_lease:${lease.id}`,
          details: { device_id: lease.deviceId, port: body.port },
        });
        set.status = 201;
        return {
          data: {
            lease_id: lease.id,
            expires_at: lease.expiresAt.toISOString(),
            port: body.port,
            connect_path: `/api/v1/devices/${lease.deviceId}/forwards/${lease.id}/connect?port=${body.port}`,
          },
        };
      },
      {
        access: "operator",
        detail: { summary: "Open a port forward to a device (outpost forward; docs/cli.md)" },
        parse: ({ request }) => readJsonBody(request, 1024),
        params: DeviceParams,
        body: OpenForwardBody,
        response: { 201: ForwardReply, ...errorReplies(400, 401, 403, 404, 409, 413) },
      },
    )
    .delete(
      "/api/v1/devices/:device_id/forwards/:lease_id",
      async ({ params, principal, set, request }) => {
        requireToken(principal);
        await endLease(sql, params.device_id, params.lease_id, "closed");
        noteAudit(request, { details: { device_id: params.device_id } });
        set.status = 204;
        return "";
      },
      {
        access: "operator",
        detail: { summary: "Close a port forward (its lease)" },
        params: LeaseParams,
        response: { 204: NoContent, ...errorReplies(401, 403, 404) },
      },
    )
    .ws("/api/v1/devices/:device_id/forwards/:lease_id/connect", {
      access: "operator",
      query: ForwardConnectQuery,
      beforeHandle({ principal }) {
        requireToken(principal);
      },
      async open(ws) {
        const { device_id: deviceId, lease_id: leaseId } = ws.data.params as Record<string, string>;
        const principal = ws.data.principal as Principal & { kind: "token" };
        const port = Number((ws.data.query as { port: string }).port);
        const carried: Carried = {
          leaseId,
          deviceId,
          port,
          actor: `token ${principal.name}`,
          address: ws.remoteAddress ?? null,
          openedAt: Date.now(),
          toDevice: 0,
          fromDevice: 0,
          closed: false,
        };
        connections.set(ws.id, carried);
        const refuse = (code: string) => {
          finish(carried, code);
          ws.close(FORWARD_CLOSE[code] ?? 1011, code);
        };
        if (!(await leaseIsActive(sql, deviceId, leaseId).catch(() => false)))
          return refuse("lease_not_found");
        await renewLease(sql, leaseId, FORWARD_LEASE_SECONDS);
        carried.renew = setInterval(
          () => void renewLease(sql, leaseId, FORWARD_LEASE_SECONDS).catch(() => {}),
          RENEW_MS,
        );
        let socket: net.Socket;
        try {
          socket = await tunnelSocket(mux(), {
            secretKey: config.secretKey,
            baseDomain: config.baseDomain,
            deviceId,
            port,
          });
        } catch (error) {
          return refuse(error instanceof MuxError ? error.code : "device_not_connected");
        }
        if (carried.closed) return socket.destroy();
        carried.socket = socket;
        socket.on("data", (chunk: Buffer) => {
          carried.fromDevice += chunk.length;
          // -1: queued behind a slow client; the device's side waits for the drain.
          if (ws.raw.send(chunk) === -1) socket.pause();
        });
        // The device's side finished sending: the client's socket ends its writing too (half-close).
        socket.on("end", () => ws.send("end"));
        socket.on("close", () => {
          finish(carried, "closed");
          ws.close(1000, "closed");
        });
        socket.on("error", () => {});
        socket.resume();
        ws.send("open");
      },
      drain(ws) {
        connections.get(ws.id)?.socket?.resume();
      },
      message(ws, message) {
        const carried = connections.get(ws.id);
        const socket = carried?.socket;
        if (!carried || !socket) return;
        if (message === "end") {
          socket.end();
          return;
        }
        const bytes = message instanceof Uint8Array ? message : undefined;
        if (!bytes) return;
        carried.toDevice += bytes.length;
        socket.write(bytes);
      },
      close(ws) {
        const carried = connections.get(ws.id);
        connections.delete(ws.id);
        if (carried) finish(carried, "closed");
      },
    });
}
