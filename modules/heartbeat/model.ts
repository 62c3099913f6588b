import { type Static, Type } from "@sinclair/typebox";
import { compileSchema, JsonObject } from "../platform/schemas";

/** The heartbeat body (reference "Era B"): `{telemetry:{device,scripts,meta}, connection_status}`. */
export const HeartbeatBody = Type.Object({
  telemetry: Type.Object({
    device: Type.Optional(JsonObject),
    scripts: Type.Optional(JsonObject),
    meta: Type.Optional(JsonObject),
  }),
  connection_status: Type.Optional(Type.Union([JsonObject, Type.Null()])),
});
export type HeartbeatBody = Static<typeof HeartbeatBody>;
export const heartbeatBody = compileSchema(HeartbeatBody);

/** Largest heartbeat body accepted (the agent keeps the same figure). */
export const HEARTBEAT_MAX_BYTES = 256 * 1024;
