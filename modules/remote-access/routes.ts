import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { noteAudit } from "../audit/service";
import { consumeRateLimit } from "../devices/service";
import type { Principal } from "../platform/access";
import type { Config } from "../platform/config";
import type { AppContext } from "../platform/context";
import { badRequest } from "../platform/errors";
import { clientAddress } from "../platform/http";
import { readJsonBody } from "../platform/json-body";
import { ApiErrorSchema, DeviceParams, errorReplies, NoContent, QUIET } from "../platform/schemas";
import { domainAllowed } from "./domains";
import { deviceHost, normaliseHostname } from "./hosts";
import {
  CheckDomainQuery,
  CheckDomainRefusal,
  LeaseParams,
  LeaseReply,
  leaseJson,
  OpenLeaseBody,
} from "./model";
import { API_LEASE_DEFAULT_SECONDS, endLease, openLease } from "./service";

/** check_domain asks per client address per minute: Caddy asks once per new hostname, so this is ample. */
const CHECK_DOMAIN_RATE_LIMIT = 600;

/** Where a browser reaches a device's web UI: through Caddy on https, or the bare vhost port without TLS. */
/**
 * Behind https the device hosts are served by the proxy that serves the console (Caddy, docs/deploy.md),
 * so on BASE_URL's port: none for 443, else that port. Without a proxy, the tunnel's HTTP front.
 */
export function deviceWebUrl(config: Config, deviceId: string): string {
  const host = deviceHost(deviceId, config.baseDomain);
  const base = new URL(config.baseUrl);
  return base.protocol === "https:"
    ? `https://${host}${base.port ? `:${base.port}` : ""}/`
    : `http://${host}:${config.tunnelHttpPort}/`;
}

export function holderOf(principal: Principal) {
  return principal.kind === "session"
    ? { operatorId: principal.operatorId, holder: principal.email }
    : { apiTokenId: principal.tokenId, holder: `API token ${principal.name}` };
}

export function remoteAccessRoutes(ctx: AppContext) {
  const { config, database } = ctx;
  const sql = database.sql;

  return new Elysia({ name: "remote-access" })
    .use(ctx.access)
    .post(
      "/api/v1/devices/:device_id/remote_access",
      async ({ body, params, principal, set, request }) => {
        const settings = await ctx.settings.device();
        const lease = await openLease(sql, {
          deviceId: params.device_id,
          ownerKind: "api",
          ...holderOf(principal!),
          ttlSeconds: body?.ttl_seconds ?? API_LEASE_DEFAULT_SECONDS,
          maxMinutes: config.remoteAccessMaxMinutes,
          onlineWindowSeconds: settings.onlineWindowSeconds,
        });
        noteAudit(request, {
          target: `remote_access_lease:${lease.id}`,
          details: { device_id: lease.deviceId, expires_at: lease.expiresAt.toISOString() },
        });
        set.status = 201;
        return { data: leaseJson(lease, deviceWebUrl(config, lease.deviceId)) };
      },
      {
        access: "operator",
        detail: { summary: "Open remote access to a device's web UI (a lease)" },
        parse: ({ request }) => readJsonBody(request, 4096),
        params: DeviceParams,
        // Optional: no body (or null) opens a lease of the default length.
        body: Type.Optional(
          Type.Union([OpenLeaseBody, Type.Null()], { ...QUIET, message: "must be a JSON object" }),
        ),
        response: { 201: LeaseReply, ...errorReplies(400, 401, 403, 404, 409, 413) },
      },
    )
    .delete(
      "/api/v1/devices/:device_id/remote_access/:lease_id",
      async ({ params, set, request }) => {
        await endLease(sql, params.device_id, params.lease_id, "closed");
        noteAudit(request, { details: { device_id: params.device_id } });
        set.status = 204;
        return "";
      },
      {
        access: "operator",
        detail: { summary: "End a remote-access lease" },
        params: LeaseParams,
        response: { 204: NoContent, ...errorReplies(401, 403, 404) },
      },
    )
    .get(
      "/api/v1/check_domain",
      async ({ query, set }) => {
        const host = normaliseHostname(query.domain);
        if (!host) throw badRequest("domain must be a hostname", { field: "domain" });
        if (!(await domainAllowed(sql, host, config))) {
          // Reference §1.9: exactly this body, not the usual error envelope.
          set.status = 401;
          return { error: "The host is not permitted" };
        }
        set.status = 204;
        return "";
      },
      {
        access: "public",
        detail: {
          summary: "Ask whether a hostname is a device host with remote access (for Caddy on-demand TLS)",
        },
        transform: ({ request, server }) =>
          consumeRateLimit(sql, {
            key: `check_domain:${clientAddress(request, server)}`,
            limit: CHECK_DOMAIN_RATE_LIMIT,
            what: "check_domain",
          }),
        query: CheckDomainQuery,
        response: { 204: NoContent, 400: ApiErrorSchema, 401: CheckDomainRefusal, 429: ApiErrorSchema },
      },
    );
}
