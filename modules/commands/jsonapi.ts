import { Elysia } from "elysia";
import { noteAudit } from "../audit/service";
import { actorLabel, JSONAPI_PREFIX, jsonApiDocument, jsonApiNextLink, jsonApiPageSize } from "../jsonapi";
import { ResourceIdParams } from "../jsonapi/model";
import type { AppContext } from "../platform/context";
import { AppError, badRequest } from "../platform/errors";
import { isPlainObject, readJsonBody } from "../platform/json-body";
import { jsonApiErrorReplies, NoContent } from "../platform/schemas";
import { deviceSettings } from "../settings/service";
import {
  CommandCreateDocument,
  CommandDocument,
  CommandListDocument,
  CommandListQuery,
  commandJson,
} from "./model";
import { cancelCommand, getCommand, listCommands, queueCommand } from "./service";

const BODY_MAX_BYTES = 1024 * 1024 + 64 * 1024;

function commandResource(command: ReturnType<typeof commandJson>) {
  const { id, device_id: deviceId, ...attributes } = command;
  return {
    type: "pending_command",
    id,
    attributes: { ...attributes, device_id: deviceId },
    relationships: { device: { data: { type: "device", id: deviceId } } },
    links: { self: `${JSONAPI_PREFIX}/pending_commands/${id}` },
  };
}

/** The JSON:API `pending_command` resource: list, read, queue, withdraw. */
export function commandJsonApiRoutes(ctx: AppContext) {
  const { config, database } = ctx;
  const sql = database.sql;

  return new Elysia({ name: "commands-jsonapi", prefix: JSONAPI_PREFIX })
    .use(ctx.access)
    .get(
      "/pending_commands",
      async ({ query, request }) => {
        const list = await listCommands(sql, {
          deviceId: query["filter[device_id]"] || undefined,
          status: query["filter[status]"],
          limit: jsonApiPageSize(query),
          cursor: query["page[after]"] || undefined,
        });
        return jsonApiDocument({
          data: list.commands.map((c) => commandResource(commandJson(c))),
          links: { next: jsonApiNextLink(request, list.nextCursor) },
        });
      },
      {
        access: "viewer",
        detail: { summary: "List commands, newest first, a keyset page at a time" },
        query: CommandListQuery,
        response: { 200: CommandListDocument, ...jsonApiErrorReplies(400, 401, 403) },
      },
    )
    .get(
      "/pending_commands/:id",
      async ({ params }) => {
        const command = await getCommand(sql, params.id);
        if (!command) throw new AppError(404, "not_found", "Command not found");
        return jsonApiDocument({ data: commandResource(commandJson(command)) });
      },
      {
        access: "viewer",
        detail: { summary: "One command" },
        params: ResourceIdParams,
        response: { 200: CommandDocument, ...jsonApiErrorReplies(401, 403, 404) },
      },
    )
    .post(
      "/pending_commands",
      async ({ body, principal, request }) => {
        const { attributes } = body.data;
        const relationships: Record<string, unknown> = body.data.relationships ?? {};
        const related =
          isPlainObject(relationships.device) && isPlainObject(relationships.device.data)
            ? relationships.device.data.id
            : undefined;
        const deviceId = related ?? attributes.device_id;
        if (typeof deviceId !== "string") {
          throw badRequest("The device is required (relationships.device or attributes.device_id)", {
            field: "device_id",
          });
        }
        const settings = await deviceSettings(config);
        const ttl = attributes.ttl_seconds ?? settings.commandTtlSeconds;
        const command = await queueCommand(sql, {
          deviceId,
          type: attributes.type,
          args: attributes.args,
          payload: attributes.payload,
          publicKey: attributes.public_key,
          ttlSeconds: ttl,
          queuedBy: actorLabel(principal),
        });
        noteAudit(request, {
          target: `command:${command.id}`,
          details: { type: command.type, device_id: command.deviceId },
        });
        return jsonApiDocument({ data: commandResource(commandJson(command)) }, 201);
      },
      {
        access: "operator",
        detail: { summary: "Queue a command for a device" },
        parse: ({ request }) => readJsonBody(request, BODY_MAX_BYTES),
        body: CommandCreateDocument,
        response: { 201: CommandDocument, ...jsonApiErrorReplies(400, 401, 403, 404, 409, 413, 422) },
      },
    )
    .delete(
      "/pending_commands/:id",
      async ({ params, request }) => {
        const command = await getCommand(sql, params.id);
        if (command) noteAudit(request, { details: { type: command.type, device_id: command.deviceId } });
        const outcome = await cancelCommand(sql, params.id);
        if (outcome === "not_found") throw new AppError(404, "not_found", "Command not found");
        if (outcome === "not_queued") {
          throw new AppError(409, "command_not_queued", "Only a command that is still queued can be deleted");
        }
        return new Response(null, { status: 204 });
      },
      {
        access: "operator",
        detail: { summary: "Delete a command that is still queued" },
        params: ResourceIdParams,
        response: { 204: NoContent, ...jsonApiErrorReplies(401, 403, 404, 409) },
      },
    );
}
