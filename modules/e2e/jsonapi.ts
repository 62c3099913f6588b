import { Elysia } from "elysia";
import { JSONAPI_PREFIX, jsonApiDocument } from "../jsonapi";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { jsonApiErrorReplies } from "../platform/schemas";
import { e2eConfigFor } from "./config";
import {
  HEALTH_RUNS,
  type JourneyHealth,
  JourneyHealthDocument,
  JourneyHealthQuery,
  journeyHealth,
  journeyHealthJson,
} from "./health";

function healthResource(health: JourneyHealth) {
  const { suite_id, environment_label, journey_id } = health;
  return {
    type: "e2e_journey_health",
    id: `${suite_id}/${environment_label}/${journey_id}`,
    attributes: journeyHealthJson(health),
  };
}

/**
 * GET /api/json/e2e_journey_health: the runs page's journey health (pass rate, flaky verdict,
 * history) for operators' tools. Pairs come from the configuration: every suite in every allowed
 * environment, narrowed by `filter[suite_id]` / `filter[environment_label]`; `filter[flaky]=true`
 * keeps the flaky ones.
 */
export function e2eJsonApiRoutes(ctx: AppContext) {
  const e2e = ctx.config.e2eEnabled ? e2eConfigFor(ctx.config) : undefined;
  return new Elysia({ name: "e2e-jsonapi", prefix: JSONAPI_PREFIX }).use(ctx.access).get(
    "/e2e_journey_health",
    async ({ query }) => {
      if (!e2e) throw new AppError(404, "not_found", "E2E runs are not enabled on this server.");
      const suite = query["filter[suite_id]"] || undefined;
      const environment = query["filter[environment_label]"] || undefined;
      const flaky = query["filter[flaky]"];
      const pairs = [...e2e.suites.keys()]
        .filter((s) => !suite || s === suite)
        .flatMap((suite_id) =>
          e2e.allowedEnvironments
            .filter((e) => !environment || e === environment)
            .map((environment_label) => ({ suite_id, environment_label })),
        );
      const health = (await journeyHealth(ctx.database, pairs)).filter(
        (h) => flaky === undefined || h.flaky === (flaky === "true"),
      );
      return jsonApiDocument({ data: health.map(healthResource), meta: { runs_window: HEALTH_RUNS } });
    },
    {
      access: "viewer",
      detail: { summary: "Journey health: pass rate, flaky verdict and recent history per journey" },
      query: JourneyHealthQuery,
      response: { 200: JourneyHealthDocument, ...jsonApiErrorReplies(400, 401, 403, 404) },
    },
  );
}
