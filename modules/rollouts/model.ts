// Wire schemas of the rollouts API (docs/fleet.md, _Rollouts_), with the types derived from them.
import { type Static, Type } from "@sinclair/typebox";
import { RUN_SCRIPT_LIMITS, SCRIPT_MAX_BYTES } from "../commands/service";
import { TagSchema } from "../fleet/model";
import { QUERY_MAX_LENGTH } from "../fleet/service";
import { ButtonForm, ConsoleForm, FormList, FormText, literalUnion, QUIET } from "../platform/schemas";

export const ROLLOUT_STATUSES = ["running", "paused", "completed", "cancelled"] as const;
export type RolloutStatus = (typeof ROLLOUT_STATUSES)[number];
export const TARGET_STATES = ["queued", "delivered", "succeeded", "failed", "skipped"] as const;
export type TargetState = (typeof TARGET_STATES)[number];

/** Most devices one rollout may act on; a selection of ids is capped as bulk actions are. */
export const ROLLOUT_DEVICES_MAX = 100_000;
export const ROLLOUT_IDS_MAX = 1000;
export const CONCURRENCY_MAX = 10_000;
/** Longest a rollout may run: its deadline is at most this far away. */
export const DEADLINE_MAX_HOURS = 24 * 30;
export const ROLLOUT_NAME_MAX = 100;

const ScriptName = Type.String({
  minLength: 1,
  maxLength: 128,
  description: "The script's name on the device",
});

/**
 * What a rollout does to each device: one entry per action, told apart by `type`. A new action is one
 * more entry here and one in actions.ts.
 */
export const RolloutAction = Type.Union(
  [
    Type.Object({ type: Type.Literal("approve") }, { description: "Approve pending devices" }),
    Type.Object({ type: Type.Literal("reject") }, { description: "Reject pending devices" }),
    Type.Object({ type: Type.Literal("revoke") }, { description: "Revoke approved devices" }),
    Type.Object({ type: Type.Literal("add_tag"), tag: TagSchema }, { description: "Set an operator tag" }),
    Type.Object(
      { type: Type.Literal("remove_tag"), key: Type.String({ minLength: 1, maxLength: 63 }) },
      { description: "Remove an operator tag by key" },
    ),
    Type.Object(
      {
        type: Type.Literal("install_script"),
        script: Type.String({ minLength: 1, maxLength: SCRIPT_MAX_BYTES, description: "The script's text" }),
      },
      { description: "Install a script (the install_script command)" },
    ),
    Type.Object(
      { type: Type.Literal("remove_script"), name: ScriptName },
      { description: "Remove a script (the remove_script command)" },
    ),
    Type.Object(
      {
        type: Type.Literal("run_script"),
        script: Type.String({ minLength: 1, maxLength: SCRIPT_MAX_BYTES, description: "The script's text" }),
        name: Type.Optional(Type.String({ minLength: 1, maxLength: RUN_SCRIPT_LIMITS.nameMax })),
        timeout_seconds: Type.Optional(
          Type.Integer({
            minimum: RUN_SCRIPT_LIMITS.timeoutMinSeconds,
            maximum: RUN_SCRIPT_LIMITS.timeoutMaxSeconds,
          }),
        ),
      },
      {
        description:
          "Run a script once on each device (the run_script command; agents refuse it unless their config allows it); its output is the device's result",
      },
    ),
  ],
  { description: "One action, told apart by `type`" },
);
export type RolloutAction = Static<typeof RolloutAction>;
export type RolloutActionType = RolloutAction["type"];

/** Body of `POST /api/v1/rollouts`. */
export const CreateRolloutBody = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: ROLLOUT_NAME_MAX })),
    action: RolloutAction,
    target: Type.Object(
      {
        ids: Type.Optional(Type.Array(Type.String(), { minItems: 1, maxItems: ROLLOUT_IDS_MAX })),
        q: Type.Optional(Type.String({ maxLength: QUERY_MAX_LENGTH, description: "A fleet query" })),
        view: Type.Optional(Type.String({ maxLength: 200, description: "A saved view's id or name" })),
      },
      { description: "Either ids, or a query and/or a view (resolved once, at creation)" },
    ),
    canary_count: Type.Optional(Type.Integer({ minimum: 0, maximum: ROLLOUT_DEVICES_MAX })),
    canary_percent: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    concurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: CONCURRENCY_MAX, default: 50 })),
    failure_threshold: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 100, description: "Percent of a wave's devices; default 10" }),
    ),
    deadline: Type.Optional(Type.String({ format: "date-time", description: "Default: 24 hours from now" })),
    confirm_overlap: Type.Optional(
      Type.Boolean({ description: "Start even though devices are in another active rollout" }),
    ),
  },
  {
    ...QUIET,
    examples: [
      {
        action: { type: "add_tag", tag: { key: "ring", value: "2" } },
        target: { q: "tag:site=berlin" },
        canary_percent: 5,
        concurrency: 100,
        failure_threshold: 10,
      },
    ],
  },
);
export type CreateRolloutBody = Static<typeof CreateRolloutBody>;

const Counts = Type.Object({
  queued: Type.Integer(),
  delivered: Type.Integer(),
  succeeded: Type.Integer(),
  failed: Type.Integer(),
  skipped: Type.Integer(),
});
export type TargetCounts = Static<typeof Counts>;

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()]);

export const RolloutJson = Type.Object({
  id: Type.String({ format: "uuid" }),
  name: Type.String(),
  action: RolloutAction,
  target: Type.Object({
    kind: literalUnion(["ids", "query", "view"] as const),
    query: Nullable(Type.String()),
    view: Nullable(Type.String()),
  }),
  total: Type.Integer(),
  canary_size: Type.Integer(),
  concurrency: Type.Integer(),
  failure_threshold: Type.Integer(),
  deadline: Type.String({ format: "date-time" }),
  status: literalUnion(ROLLOUT_STATUSES),
  pause_reason: Type.Union([literalUnion(["operator", "threshold"] as const), Type.Null()]),
  current_wave: Type.Integer(),
  created_by: Type.String(),
  created_at: Type.String({ format: "date-time" }),
  finished_at: Nullable(Type.String({ format: "date-time" })),
  counts: Counts,
});
export type RolloutJson = Static<typeof RolloutJson>;

export const RolloutReply = Type.Object({ data: RolloutJson });
export const RolloutListReply = Type.Object({
  data: Type.Array(RolloutJson),
  next_cursor: Nullable(Type.String()),
});
export const RolloutListQuery = Type.Object(
  {
    status: Type.Optional(literalUnion(ROLLOUT_STATUSES)),
    cursor: Type.Optional(Type.String({ maxLength: 200 })),
    limit: Type.Optional(
      Type.String({ pattern: "^(200|1[0-9]{2}|[1-9][0-9]?)$", message: "must be an integer from 1 to 200" }),
    ),
  },
  { additionalProperties: true },
);

export const RolloutParams = Type.Object({ rollout_id: Type.String({ description: "The rollout's id" }) });

export const TargetJson = Type.Object({
  device_id: Type.String({ format: "uuid" }),
  device_name: Type.String(),
  wave: Type.Integer(),
  state: literalUnion(TARGET_STATES),
  command_id: Nullable(Type.String({ format: "uuid" })),
  started_at: Nullable(Type.String({ format: "date-time" })),
  finished_at: Nullable(Type.String({ format: "date-time" })),
  output: Type.Unknown({ description: "What the device answered (command actions), or null" }),
  error: Nullable(Type.String()),
});
export type TargetJson = Static<typeof TargetJson>;

export const TargetListQuery = Type.Object(
  {
    state: Type.Optional(literalUnion(TARGET_STATES)),
    cursor: Type.Optional(Type.String({ maxLength: 200 })),
    limit: Type.Optional(
      Type.String({
        pattern: "^(500|[1-4][0-9]{2}|[1-9][0-9]?)$",
        message: "must be an integer from 1 to 500",
      }),
    ),
  },
  { additionalProperties: true },
);
export const TargetListReply = Type.Object({
  data: Type.Array(TargetJson),
  next_cursor: Nullable(Type.String()),
});

export const CsvReply = Type.String({ description: "CSV: one row per device", contentMediaType: "text/csv" });

// ---- console forms (console-routes.tsx)

export const NewRolloutQuery = Type.Object(
  {
    q: Type.Optional(Type.String({ maxLength: QUERY_MAX_LENGTH })),
    view: Type.Optional(Type.String({ maxLength: 200 })),
    ids: Type.Optional(FormList(100, ROLLOUT_IDS_MAX)),
  },
  { additionalProperties: true },
);

export const RolloutForm = ConsoleForm({
  name: Type.Optional(FormText(1000)),
  action: Type.Optional(FormText(40)),
  tag: Type.Optional(FormText(400)),
  script: Type.Optional(FormText(SCRIPT_MAX_BYTES + 1000)),
  script_name: Type.Optional(FormText(1000)),
  q: Type.Optional(FormText(QUERY_MAX_LENGTH)),
  view: Type.Optional(FormText(1000)),
  ids: Type.Optional(FormList(100, ROLLOUT_IDS_MAX)),
  canary: Type.Optional(FormText(20)),
  concurrency: Type.Optional(FormText(20)),
  failure_threshold: Type.Optional(FormText(20)),
  deadline_hours: Type.Optional(FormText(20)),
  confirm_overlap: Type.Optional(FormText(10)),
});
export type RolloutForm = Static<typeof RolloutForm>;

export const RolloutButtonForm = ButtonForm;
