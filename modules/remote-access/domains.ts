import type { Sql } from "postgres";
import { getDevice } from "../devices/service";
import { deviceIdFromHost } from "./hosts";

/**
 * Caddy's on-demand TLS `ask`: may a certificate be issued for `host` (already normalised)? Yes for the
 * console's own host and for `dev-<32hex>.<BASE_DOMAIN>` of an existing approved device (one primary-key
 * lookup); no for anything else (reference §1.9).
 */
export async function domainAllowed(
  sql: Sql,
  host: string,
  config: { baseUrl: string; baseDomain: string },
): Promise<boolean> {
  if (host === new URL(config.baseUrl).hostname.toLowerCase()) return true;
  const deviceId = deviceIdFromHost(host, config.baseDomain);
  if (!deviceId || host.includes(":")) return false;
  const device = await getDevice(sql, deviceId, { onlineWindowSeconds: 60 });
  return device?.approvalStatus === "approved";
}
