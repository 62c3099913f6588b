import { Value } from "@sinclair/typebox/value";
import { Elysia } from "elysia";
import { noteAudit } from "../audit/service";
import { consumeRateLimit } from "../devices/service";
import type { Principal } from "../platform/access";
import type { Config } from "../platform/config";
import type { AppContext } from "../platform/context";
import { badRequest } from "../platform/errors";
import { clientAddress } from "../platform/http";
import { jsonBody, readJsonBody } from "../platform/json-body";
import { deviceSettings } from "../settings/service";
import { domainAllowed } from "./domains";
import { deviceHost, normaliseHostname } from "./hosts";
import { leaseJson, OpenLeaseBody } from "./model";
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
      async ({ body: raw, params, principal, set, request }) => {
        const body = raw === undefined || raw === null ? {} : jsonBody(raw);
        if (!Value.Check(OpenLeaseBody, body)) {
          throw badRequest("The body may only hold ttl_seconds, an integer from 30 to 3600", {
            field: "ttl_seconds",
          });
        }
        const settings = await deviceSettings(config);
        const lease = await openLease(sql, {
          deviceId: params.device_id,
          ownerKind: "api",
          ...holderOf(principal!),
          ttlSeconds: body.ttl_seconds ?? API_LEASE_DEFAULT_SECONDS,
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
      { access: "operator", parse: ({ request }) => readJsonBody(request, 4096) },
    )
    .delete(
      "/api/v1/devices/:device_id/remote_access/:lease_id",
      async ({ params, set, request }) => {
        await endLease(sql, params.device_id, params.lease_id, "closed");
        noteAudit(request, { details: { device_id: params.device_id } });
        set.status = 204;
        return "";
      },
      { access: "operator" },
    )
    .get(
      "/api/v1/check_domain",
      async ({ query, request, server, set }) => {
        await consumeRateLimit(sql, {
          key: `check_domain:${clientAddress(request, server)}`,
          limit: CHECK_DOMAIN_RATE_LIMIT,
          what: "check_domain",
        });
        if (query.domain === undefined || query.domain === "") {
          throw badRequest("domain is required", { field: "domain" });
        }
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
      { access: "public" },
    );
}
