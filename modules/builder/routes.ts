import { Elysia } from "elysia";
import type { AppContext } from "../platform/context";
import { readJsonBody } from "../platform/json-body";
import { errorReplies } from "../platform/schemas";
import {
  BuilderOptionsParams,
  BuilderOptionsQuery,
  BuilderOptionsReply,
  BuilderSchemasReply,
  BuilderValidationBody,
  BuilderValidationReply,
} from "./model";
import { builderSchemaOptions, listBuilderSchemas, validateBuilderConfiguration } from "./service";

const VALIDATE_MAX_BYTES = 256 * 1024;

export function builderRoutes(ctx: AppContext) {
  const sql = ctx.database.sql;
  return new Elysia({ name: "builder" })
    .use(ctx.access)
    .get("/api/v1/builder-schemas", async () => ({ data: await listBuilderSchemas(sql) }), {
      access: "viewer",
      detail: { summary: "The schemas the alert and report builders offer: one per product" },
      response: { 200: BuilderSchemasReply, ...errorReplies(401, 403) },
    })
    .get(
      "/api/v1/builder-schemas/:schema_id/versions/:schema_version/options",
      async ({ params, query }) => ({
        data: await builderSchemaOptions(sql, params.schema_id, query.builder ?? "alert"),
      }),
      {
        access: "viewer",
        detail: { summary: "A product's current fields, as builder options" },
        params: BuilderOptionsParams,
        query: BuilderOptionsQuery,
        response: { 200: BuilderOptionsReply, ...errorReplies(401, 403, 404, 422) },
      },
    )
    .post(
      "/api/v1/builder-configurations/validate",
      async ({ body }) => validateBuilderConfiguration(sql, body),
      {
        access: "viewer",
        detail: { summary: "Check a builder's selections against the product's current fields" },
        parse: ({ request }) => readJsonBody(request, VALIDATE_MAX_BYTES),
        body: BuilderValidationBody,
        response: { 200: BuilderValidationReply, ...errorReplies(400, 401, 403, 413, 422) },
      },
    );
}
