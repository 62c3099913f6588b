import { type Static, Type } from "@sinclair/typebox";
import {
  RUN_SCRIPT_NAME_MAX,
  RUN_SCRIPT_STREAM_MAX_BYTES,
  RUN_SCRIPT_TIMEOUT_MAX_S,
  RUN_SCRIPT_TIMEOUT_MIN_S,
} from "../../shared/scripts/run-once";
import {
  changeDocument,
  listDocument,
  Nullable,
  oneDocument,
  pageQuery,
  Related,
  resourceSchema,
  Time,
} from "../jsonapi/model";
import { compileSchema, JsonObject, JsonValueOr, literalUnion, QUIET } from "../platform/schemas";
import type { Command } from "./service";
import { COMMAND_TYPES } from "./validation";

export const COMMAND_STATUSES = ["queued", "delivered", "succeeded", "failed", "expired"] as const;
export type CommandStatus = (typeof COMMAND_STATUSES)[number];

/**
 * `POST /api/v1/devices/:device_id/command_results`. The list is checked first (400, before the
 * device is even looked up, as in the reference), then each item on its own (modules/commands/results.ts).
 */
export const CommandResultsBody = Type.Object(
  {
    results: Type.Array(
      Type.Unknown({
        description: "A result (CommandResult); a malformed one is refused alone, in the reply",
      }),
      { message: "must be a list" },
    ),
  },
  {
    ...QUIET,
    additionalProperties: true,
    examples: [
      {
        results: [
          { command_id: "0193a1b2-0000-7000-8000-000000000001", status: "OK", output: { scripts: [] } },
        ],
      },
    ],
  },
);

/** An entry of the list. A missing or empty `command_id` is a result for no command (the agent's `missing_command_id`). */
export const CommandResult = Type.Object({
  command_id: Type.Optional(Type.String()),
  status: Type.Union([Type.Literal("OK"), Type.Literal("FAILED")]),
  output: Type.Optional(Type.Unknown()),
  error: Type.Optional(Type.Union([Type.String(), Type.Null()])),
});
export type CommandResult = Static<typeof CommandResult>;

/** What became of each entry of a results post (modules/commands/results.ts). */
export const EntryOutcomeSchema = Type.Object({
  index: Type.Integer(),
  command_id: Type.Union([Type.String(), Type.Null()]),
  outcome: Type.Union([
    Type.Literal("recorded"),
    Type.Literal("recorded_without_command"),
    Type.Literal("ignored"),
    Type.Literal("invalid"),
  ]),
  reason: Type.Optional(Type.String()),
});

/** `POST /api/v1/devices/{id}/command_results` → 202. */
export const CommandResultsReply = Type.Object({
  data: Type.Object({ acknowledged_count: Type.Integer(), results: Type.Array(EntryOutcomeSchema) }),
});

/** `GET /api/v1/devices/{id}/command_payloads/{ref}` → 200: the payload itself, unwrapped. */
export const CommandPayloadReply = Type.Record(Type.String(), Type.Unknown(), {
  description: "The deferred payload, as queued (unwrapped, as the agent expects)",
  examples: [
    {
      name: "fan-speed",
      data: "/*---\nname: fan-speed\nversion: 2\nschema:\n  type: object\n---*/\nfunction main() { return { rpm: 1200 }; }\n",
    },
  ],
});

export const CommandPayloadParams = Type.Object({
  device_id: Type.String({ description: "The device's id (UUID)" }),
  ref: Type.String({ description: "The command's `payload_ref`" }),
});
export const commandResult = compileSchema(CommandResult);

export function commandJson(command: Command) {
  return {
    id: command.id,
    device_id: command.deviceId,
    type: command.type,
    args: command.args,
    payload: command.payload,
    payload_ref: command.payloadRef,
    public_key: command.publicKey,
    status: command.status,
    queued_at: command.queuedAt.toISOString(),
    expires_at: command.expiresAt.toISOString(),
    delivered_at: command.deliveredAt?.toISOString() ?? null,
    completed_at: command.completedAt?.toISOString() ?? null,
    output: command.output ?? null,
    error: command.error,
    queued_by: command.queuedBy,
  };
}

// ---------------------------------------------------------------- the JSON:API pending_command resource (jsonapi.ts)

export const COMMAND_TTL_MIN_SECONDS = 10;
export const COMMAND_TTL_MAX_SECONDS = 30 * 86_400;

/** run_script's payload (checked by the commands service: validation.ts). */
export const RunScriptPayload = Type.Object(
  {
    data: Type.String({
      description:
        "The script: JavaScript for the agent's sandbox (docs/agent.md), at most 256 KiB; front matter optional",
    }),
    name: Type.Optional(
      Type.String({
        maxLength: RUN_SCRIPT_NAME_MAX,
        description: "Display name (default: the front matter's)",
      }),
    ),
    timeout_seconds: Type.Optional(
      Type.Integer({
        minimum: RUN_SCRIPT_TIMEOUT_MIN_S,
        maximum: RUN_SCRIPT_TIMEOUT_MAX_S,
        description: "Default: the agent's script_timeout_ms",
      }),
    ),
  },
  { title: "RunScriptPayload" },
);

/** What an agent answers for a run_script (the command's `output`, also when it failed). */
export const RunScriptOutput = Type.Object(
  {
    exit_code: Type.Integer({ description: "0: ran to its end; 1: threw or hit a limit; 124: timed out" }),
    stdout: Type.String({
      description: `console.log/info/debug lines and main()'s value, at most ${RUN_SCRIPT_STREAM_MAX_BYTES} bytes`,
    }),
    stderr: Type.String({
      description: `console.warn/error lines and the error, at most ${RUN_SCRIPT_STREAM_MAX_BYTES} bytes`,
    }),
    stdout_truncated: Type.Boolean(),
    stderr_truncated: Type.Boolean(),
    duration_ms: Type.Integer(),
  },
  { title: "RunScriptOutput" },
);

/** POST /pending_commands (the command's own shape is checked by the commands service). */
export const PendingCommandAttributes = Type.Object(
  {
    device_id: Type.Optional(
      Type.Unknown({ description: "The device, unless `relationships.device` names it" }),
    ),
    type: literalUnion(COMMAND_TYPES, { message: `must be one of ${COMMAND_TYPES.join(", ")}` }),
    args: Type.Optional(Type.Unknown()),
    payload: Type.Optional(
      JsonValueOr(RunScriptPayload, {
        description:
          "What the type needs (docs/device-api.md, Commands): install_script `{name, data}`; run_script a RunScriptPayload",
      }),
    ),
    public_key: Type.Optional(Type.Unknown()),
    ttl_seconds: Type.Optional(
      Type.Union(
        [Type.Integer({ minimum: COMMAND_TTL_MIN_SECONDS, maximum: COMMAND_TTL_MAX_SECONDS }), Type.Null()],
        { message: `must be an integer from ${COMMAND_TTL_MIN_SECONDS} to ${COMMAND_TTL_MAX_SECONDS}` },
      ),
    ),
  },
  { additionalProperties: true },
);

export const CommandListQuery = Type.Object(
  {
    "filter[device_id]": Type.Optional(Type.String({ description: "One device's commands" })),
    "filter[status]": Type.Optional(
      literalUnion(COMMAND_STATUSES, { message: `must be one of ${COMMAND_STATUSES.join(", ")}` }),
    ),
    ...pageQuery(500),
  },
  { additionalProperties: true },
);

export const CommandResource = resourceSchema(
  "pending_command",
  Type.Object({
    device_id: Type.String({ format: "uuid" }),
    type: literalUnion(COMMAND_TYPES),
    args: Type.Array(Type.Unknown()),
    payload: Nullable(JsonObject),
    payload_ref: Nullable(Type.String()),
    public_key: Nullable(Type.String()),
    status: literalUnion(COMMAND_STATUSES),
    queued_at: Time,
    expires_at: Time,
    delivered_at: Nullable(Time),
    completed_at: Nullable(Time),
    output: JsonValueOr(RunScriptOutput, {
      description: "What the device answered (null until it did); a run_script's is a RunScriptOutput",
    }),
    error: Nullable(Type.String()),
    queued_by: Nullable(Type.String()),
  }),
  Type.Object({ device: Related("device") }),
);
export const CommandListDocument = listDocument(CommandResource);
export const CommandDocument = oneDocument(CommandResource);
export const CommandCreateDocument = changeDocument("pending_command", PendingCommandAttributes);
