import { Elysia } from "elysia";
import type { AppContext } from "../platform/context";
import { jsonBody, readJsonBody } from "../platform/json-body";
import { builderSchemaOptions, listBuilderSchemas, validateBuilderConfiguration } from "./service";

export function builderRoutes(ctx: AppContext) {
  const sql = ctx.database.sql;
  return new Elysia({ name: "builder" })
    .use(ctx.access)
    .get("/api/v1/builder-schemas", async () => ({ data: await listBuilderSchemas(sql) }), {
      access: "viewer",
    })
    .get(
      "/api/v1/builder-schemas/:schema_id/versions/:schema_version/options",
      async ({ params, query }) => ({
        data: await builderSchemaOptions(
          sql,
          params.schema_id,
          params.schema_version,
          query.builder ?? "alert",
        ),
      }),
      { access: "viewer" },
    )
    .post(
      "/api/v1/builder-configurations/validate",
      // Unwrapped, as in the reference: {valid, issues, cleared_slot_ids}.
      async ({ body }) => validateBuilderConfiguration(sql, jsonBody(body)),
      { access: "viewer", parse: ({ request }) => readJsonBody(request, 256 * 1024) },
    );
}
