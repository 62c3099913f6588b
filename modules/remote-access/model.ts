import { type Static, Type } from "@sinclair/typebox";
import type { Lease } from "./service";

/** Body of `POST /api/v1/devices/{id}/remote_access` (optional; `{}` or no body is fine). */
export const OpenLeaseBody = Type.Object(
  { ttl_seconds: Type.Optional(Type.Integer({ minimum: 30, maximum: 3600 })) },
  { additionalProperties: false },
);
export type OpenLeaseBody = Static<typeof OpenLeaseBody>;

export function leaseJson(lease: Lease, webUrl: string) {
  return { lease_id: lease.id, expires_at: lease.expiresAt.toISOString(), web_url: webUrl };
}
