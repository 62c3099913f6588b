import { type Static, Type } from "@sinclair/typebox";
import { ButtonForm, ConsoleForm, FormText, QUIET } from "../platform/schemas";
import type { Lease } from "./service";

/** Body of `POST /api/v1/devices/{id}/remote_access` (optional; `{}` or no body is fine). */
export const OpenLeaseBody = Type.Object(
  {
    ttl_seconds: Type.Optional(
      Type.Integer({ minimum: 30, maximum: 3600, message: "must be an integer from 30 to 3600" }),
    ),
  },
  { ...QUIET, additionalProperties: false, examples: [{ ttl_seconds: 900 }] },
);
export type OpenLeaseBody = Static<typeof OpenLeaseBody>;

/** The lease as the API answers it. */
export const LeaseReply = Type.Object({
  data: Type.Object({
    lease_id: Type.String({ format: "uuid" }),
    expires_at: Type.String({ format: "date-time" }),
    web_url: Type.String({ description: "Where a browser reaches the device's web UI" }),
  }),
});

export const LeaseParams = Type.Object({
  device_id: Type.String({ description: "The device's id (UUID)" }),
  lease_id: Type.String({ description: "The lease's id (UUID)" }),
});

/** `GET /api/v1/check_domain` (asked by Caddy before it gets a certificate for a hostname). */
export const CheckDomainQuery = Type.Object(
  {
    domain: Type.String({
      minLength: 1,
      description: "The hostname Caddy asks a certificate for",
      message: "must be a hostname",
    }),
  },
  { additionalProperties: true },
);

/** check_domain's refusal: exactly this body (the reference's, which Caddy ignores), not the usual error. */
export const CheckDomainRefusal = Type.Object({ error: Type.Literal("The host is not permitted") });

export function leaseJson(lease: Lease, webUrl: string) {
  return { lease_id: lease.id, expires_at: lease.expiresAt.toISOString(), web_url: webUrl };
}

/** The device page's remote-access panel (console): its device. */
export const ConsoleLeaseParams = Type.Object({ id: Type.String({ description: "The device's id" }) });

/** Open the device's web UI through the lease the panel showed, or leave it (the page's beacon). */
export const LeaseForm = ConsoleForm({
  lease_id: Type.Optional(FormText(100)),
  beacon: Type.Optional(FormText(10)),
});

/** The panel's live updates, for the lease the page holds. */
export const LiveQuery = Type.Object({ lease: Type.Optional(FormText(100)) });

/** Load the panel, close or reopen remote access: buttons. */
export const PanelButtonForm = ButtonForm;

/** `POST /api/v1/devices/{device_id}/forwards`: the device port `outpost forward` reaches. */
export const OpenForwardBody = Type.Object(
  {
    port: Type.Integer({ minimum: 1, maximum: 65535, message: "must be a port number from 1 to 65535" }),
  },
  { ...QUIET, additionalProperties: false, examples: [{ port: 5900 }] },
);

/** A forward: its lease (remote access held open while connections come and go) and its port. */
export const ForwardReply = Type.Object({
  data: Type.Object({
    lease_id: Type.String({ format: "uuid" }),
    expires_at: Type.String({ format: "date-time" }),
    port: Type.Integer(),
    connect_path: Type.String({
      description: "The WebSocket each forwarded TCP connection opens (binary frames; docs/cli.md)",
    }),
  }),
});

/** The WebSocket of one forwarded connection: the device port. */
export const ForwardConnectQuery = Type.Object({
  port: Type.String({ pattern: "^[1-9][0-9]{0,4}$", description: "The device port" }),
});
