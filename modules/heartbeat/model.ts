import { type Static, Type } from "@sinclair/typebox";
import { HEARTBEAT_MAX_BYTES } from "../../shared/telemetry-limits";
import { DeviceKeyQuery, JsonObject, QUIET } from "../platform/schemas";

/** The heartbeat body (reference "Era B"): `{telemetry:{device,scripts,meta}, connection_status}`. */
export const HeartbeatBody = Type.Object(
  {
    telemetry: Type.Object(
      {
        device: Type.Optional(JsonObject),
        scripts: Type.Optional(JsonObject),
        meta: Type.Optional(JsonObject),
      },
      { message: "must be a JSON object", additionalProperties: true },
    ),
    connection_status: Type.Optional(
      Type.Union([JsonObject, Type.Null()], { message: "must be a JSON object or null" }),
    ),
    /** The device sshd's public host key (`ssh-ed25519 AAAA…`): the browser terminal pins it. */
    ssh_host_key: Type.Optional(
      Type.String({ maxLength: 2048, message: "must be a string of at most 2048 characters" }),
    ),
  },
  {
    ...QUIET,
    message: "The heartbeat body must be a JSON object",
    additionalProperties: true,
    examples: [
      {
        telemetry: {
          device: { uptime_seconds: 5120 },
          scripts: {
            cpu: { data: { status: "success", validation_status: "valid", output: { usage_pct: 12.5 } } },
          },
          meta: { collected_at: "2026-11-24T12:00:00Z" },
        },
        connection_status: { active: false },
      },
    ],
  },
);
export type HeartbeatBody = Static<typeof HeartbeatBody>;

/** Largest heartbeat body accepted (shared/telemetry-limits.ts: the agent checks the same figure). */
export { HEARTBEAT_MAX_BYTES };

/** A command as the device receives it in the heartbeat reply. */
export const DeliveredCommandSchema = Type.Object({
  command_id: Type.String({ format: "uuid" }),
  type: Type.String({
    description:
      "list_scripts, install_script, remove_script, ssh_authorize, ssh_revoke or run_script; an agent answers a type it does not know FAILED",
  }),
  args: Type.Array(Type.Unknown()),
  payload: Type.Optional(Type.Unknown()),
  payload_ref: Type.Optional(Type.String()),
  public_key: Type.Optional(Type.String()),
  queued_at: Type.String({ format: "date-time" }),
});

/** `POST /api/v1/devices/{id}/heartbeat` → 200. */
export const HeartbeatReplySchema = Type.Object({
  data: Type.Object({
    commands: Type.Array(DeliveredCommandSchema),
    remote_access_token: Type.Optional(Type.String()),
    poll_interval_seconds: Type.Optional(Type.Integer()),
    tunnel_host_key: Type.Optional(Type.String()),
  }),
});

/** `GET /api/v1/devices/{id}/wait` query: how long to hold (capped by DEVICE_WAIT_MAX_SECONDS), and
 * whether the agent holds a remote-access token (a different state on the server wakes it). */
export const WaitQuery = Type.Object(
  {
    ...DeviceKeyQuery.properties,
    timeout_s: Type.Optional(
      Type.String({ pattern: "^[1-9][0-9]{0,3}$", message: "must be a whole number of seconds from 1" }),
    ),
    remote_access: Type.Optional(
      Type.Union([Type.Literal("0"), Type.Literal("1")], { message: "must be 0 or 1" }),
    ),
  },
  { additionalProperties: true },
);
export type WaitQuery = Static<typeof WaitQuery>;

/** `GET /api/v1/devices/{id}/wait` → 200: `wake` set when the agent should poll now. */
export const WaitReplySchema = Type.Object(
  {
    data: Type.Object({
      wake: Type.Union([
        Type.Literal("remote_access"),
        Type.Literal("commands"),
        Type.Literal("notified"),
        Type.Null(),
      ]),
    }),
  },
  { examples: [{ data: { wake: "commands" } }, { data: { wake: null } }] },
);
