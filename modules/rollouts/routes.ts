import { Elysia } from "elysia";
import { noteAudit } from "../audit/service";
import { principalLabel } from "../platform/access";
import type { AppContext } from "../platform/context";
import { readJsonBody } from "../platform/json-body";
import { errorReplies } from "../platform/schemas";
import { rolloutCsv } from "./csv";
import {
  CreateRolloutBody,
  CsvReply,
  RolloutButtonForm,
  RolloutListQuery,
  RolloutListReply,
  RolloutParams,
  RolloutReply,
  TargetListQuery,
  TargetListReply,
} from "./model";
import {
  controlRollout,
  createRollout,
  creationAuditDetails,
  getRollout,
  listRollouts,
  listTargets,
  type RolloutControl,
} from "./service";

const BODY_MAX = 512 * 1024;

/** The rollouts API (docs/fleet.md, _Rollouts_): viewers read, operators create and act. */
export function rolloutApiRoutes(ctx: AppContext) {
  const { database, clock } = ctx;
  const sql = database.sql;
  const parse = ({ request }: { request: Request }) => readJsonBody(request, BODY_MAX);
  const now = () => new Date(clock.now());

  const controlHandler =
    (action: RolloutControl) =>
    async ({ params, request }: { params: { rollout_id: string }; request: Request }) => {
      await controlRollout(database, params.rollout_id, action, now());
      const rollout = await getRollout(sql, params.rollout_id);
      noteAudit(request, { details: { name: rollout.name, status: rollout.status } });
      return { data: rollout };
    };
  const controlOptions = (summary: string) => ({
    access: "operator" as const,
    detail: { summary },
    params: RolloutParams,
    body: RolloutButtonForm,
    response: { 200: RolloutReply, ...errorReplies(401, 403, 404, 409) },
  });

  return new Elysia({ name: "rollouts-api" })
    .use(ctx.access)
    .post(
      "/api/v1/rollouts",
      async ({ body, principal, request, set }) => {
        const id = await createRollout(database, body, {
          createdBy: principalLabel(principal) ?? "unknown",
          now: now(),
          onlineWindowSeconds: (await ctx.settings.device()).onlineWindowSeconds,
        });
        const rollout = await getRollout(sql, id);
        noteAudit(request, {
          target: `rollout:${id}`,
          details: creationAuditDetails(rollout, body.confirm_overlap === true),
        });
        set.status = 201;
        return { data: rollout };
      },
      {
        access: "operator",
        detail: {
          summary: "Start a rollout: an action on devices (ids, a query or a view), in waves",
          description:
            "409 `rollout_overlap` (details: the devices and rollouts) when devices are in another active rollout, unless `confirm_overlap`.",
        },
        parse,
        body: CreateRolloutBody,
        response: { 201: RolloutReply, ...errorReplies(400, 401, 403, 404, 409, 413) },
      },
    )
    .get(
      "/api/v1/rollouts",
      async ({ query }) => {
        const page = await listRollouts(sql, {
          ...query,
          limit: query.limit ? Number(query.limit) : undefined,
        });
        return { data: page.rollouts, next_cursor: page.nextCursor };
      },
      {
        access: "viewer",
        detail: { summary: "Rollouts, newest first, with their devices counted by state" },
        query: RolloutListQuery,
        response: { 200: RolloutListReply, ...errorReplies(400, 401, 403) },
      },
    )
    .get(
      "/api/v1/rollouts/:rollout_id",
      async ({ params }) => ({ data: await getRollout(sql, params.rollout_id) }),
      {
        access: "viewer",
        detail: { summary: "One rollout, with its devices counted by state" },
        params: RolloutParams,
        response: { 200: RolloutReply, ...errorReplies(401, 403, 404) },
      },
    )
    .get(
      "/api/v1/rollouts/:rollout_id/results",
      async ({ params, query }) => {
        const rollout = await getRollout(sql, params.rollout_id);
        const page = await listTargets(sql, rollout.id, {
          ...query,
          limit: query.limit ? Number(query.limit) : undefined,
        });
        return { data: page.targets, next_cursor: page.nextCursor };
      },
      {
        access: "viewer",
        detail: {
          summary: "A rollout's devices, in the order they are acted on, each with its state and result",
        },
        params: RolloutParams,
        query: TargetListQuery,
        response: { 200: TargetListReply, ...errorReplies(400, 401, 403, 404) },
      },
    )
    .get(
      "/api/v1/rollouts/:rollout_id/results.csv",
      async ({ params }) => rolloutCsv(sql, await getRollout(sql, params.rollout_id)),
      {
        access: "viewer",
        detail: { summary: "A rollout's devices and results as CSV" },
        params: RolloutParams,
        response: { 200: CsvReply, ...errorReplies(401, 403, 404) },
      },
    )
    .post(
      "/api/v1/rollouts/:rollout_id/pause",
      controlHandler("pause"),
      controlOptions("Pause a running rollout: no more devices are started"),
    )
    .post(
      "/api/v1/rollouts/:rollout_id/resume",
      controlHandler("resume"),
      controlOptions("Resume a paused rollout (a wave paused by its failures goes on)"),
    )
    .post(
      "/api/v1/rollouts/:rollout_id/cancel",
      controlHandler("cancel"),
      controlOptions("Cancel a rollout: devices not reached are skipped, queued commands withdrawn"),
    );
}
