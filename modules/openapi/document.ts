/**
 * The OpenAPI 3.1 document of Outpost's APIs (`/api/v1`, `/api/json`, `/e2e`), generated from the
 * app's route table alone: each route's params, query, headers, body and replies (status → TypeBox
 * schema) as declared in its route options — the schemas Elysia validates with — and who may call it
 * (its `access` declaration). Nothing is kept on the side: a route without reply schemas shows up
 * here without them, and tests/openapi fails for it.
 */
import { OptionalKind, type TSchema } from "@sinclair/typebox";
import type { AnyElysia } from "elysia";
import { type Access, declaredAccess } from "../platform/access";
import { ApiErrorSchema, JsonApiErrorsSchema, NoContent } from "../platform/schemas";

export const API_PATH = /^\/(api\/v1|api\/json|e2e\/)/;
const SKIPPED_METHODS = new Set(["WS", "OPTIONS", "HEAD"]);
/** The version of the E2E API's description (the spec's); not the protocol version runners send. */
const E2E_API_VERSION = "1.0.0";

/** What a route's options hold that the document reads. */
export interface RouteSchemas {
  params?: TSchema;
  query?: TSchema;
  headers?: TSchema;
  body?: TSchema;
  response?: Record<string, TSchema>;
  detail?: { summary?: string; description?: string };
}

const SECURITY: Record<Access, Record<string, string[]>[]> = {
  public: [],
  device: [{ deviceApiKey: [] }],
  e2e: [{ e2eRunnerId: [], e2eRunnerToken: [] }],
  viewer: [{ apiToken: [] }],
  operator: [{ apiToken: [] }],
  admin: [{ apiToken: [] }],
};

const DESCRIPTIONS: Record<string, string> = {
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No content",
  400: "Invalid request: the body, query or path is not what the route accepts (docs/errors.md)",
  401: "No valid credentials",
  403: "The credentials do not allow this",
  404: "Not found",
  409: "Conflict with the resource's state",
  410: "Gone",
  413: "The body is over the route's limit",
  422: "Understood but not acceptable",
  429: "Too many requests (`Retry-After` says when to try again)",
};

/** Keywords of the schemas that are for validation messages only (modules/platform/validation.ts). */
const MESSAGE_KEYWORDS = new Set(["message", "tooLong", "reportAll", "refusal", "error"]);

/** Keywords whose values are data, not schemas. */
const DATA_KEYWORDS = new Set(["examples", "example", "default", "const", "enum"]);
/** Keywords whose values map names to schemas. */
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs"]);

function withoutMessages(node: unknown, isMap = false): unknown {
  if (Array.isArray(node)) return node.map((item) => withoutMessages(item));
  if (typeof node !== "object" || node === null) return node;
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (isMap) result[key] = withoutMessages(value);
    else if (MESSAGE_KEYWORDS.has(key)) continue;
    else result[key] = DATA_KEYWORDS.has(key) ? value : withoutMessages(value, SCHEMA_MAPS.has(key));
  }
  return result;
}

/** A TypeBox schema as plain JSON Schema (2020-12, as OpenAPI 3.1 has it). */
function jsonSchema(schema: TSchema): Record<string, unknown> {
  return withoutMessages(JSON.parse(JSON.stringify(schema))) as Record<string, unknown>;
}

function isJsonApi(path: string): boolean {
  return path.startsWith("/api/json");
}

function mediaOf(path: string, schema: TSchema): string {
  const declared = (schema as { contentMediaType?: string }).contentMediaType;
  if (declared) return declared;
  return isJsonApi(path) ? "application/vnd.api+json" : "application/json";
}

function content(path: string, schema: TSchema) {
  const example = (schema as { examples?: unknown[] }).examples?.[0];
  return {
    [mediaOf(path, schema)]: { schema: jsonSchema(schema), ...(example === undefined ? {} : { example }) },
  };
}

function parameters(location: "path" | "query" | "header", schema: TSchema | undefined) {
  const properties = (schema as { properties?: Record<string, TSchema> } | undefined)?.properties ?? {};
  const required = new Set((schema as { required?: string[] } | undefined)?.required ?? []);
  return Object.entries(properties).map(([name, property]) => {
    const { description, ...rest } = jsonSchema(property);
    return {
      name,
      in: location,
      required: location === "path" || required.has(name),
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
}

function responses(path: string, declared: Record<string, TSchema> | undefined) {
  if (!declared) {
    // A route whose options declare no replies yet (tests/openapi/contract.test.ts lists them).
    const media = isJsonApi(path) ? "application/vnd.api+json" : "application/json";
    const ref = { $ref: `#/components/schemas/${isJsonApi(path) ? "JsonApiErrors" : "Error"}` };
    return {
      200: { description: "Success (its schema is not declared yet)" },
      default: { description: "An error (docs/errors.md)", content: { [media]: { schema: ref } } },
    };
  }
  const result: Record<string, unknown> = {};
  for (const [status, schema] of Object.entries(declared ?? {})) {
    const description = DESCRIPTIONS[status] ?? "Reply";
    if (schema === NoContent) {
      result[status] = { description };
    } else if (schema === ApiErrorSchema || schema === JsonApiErrorsSchema) {
      const name = schema === ApiErrorSchema ? "Error" : "JsonApiErrors";
      const media = isJsonApi(path) ? "application/vnd.api+json" : "application/json";
      result[status] = {
        description,
        content: { [media]: { schema: { $ref: `#/components/schemas/${name}` } } },
      };
    } else {
      result[status] = { description, content: content(path, schema) };
    }
  }
  return result;
}

function tagOf(path: string, level: Access): string {
  if (path.startsWith("/e2e")) return "E2E";
  if (isJsonApi(path)) return "JSON:API";
  return level === "device" || path === "/api/v1/devices/register" ? "Device API" : "Operator API";
}

function operationId(method: string, path: string): string {
  const words = path
    .replace(/[{}:]/g, "")
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
  return [method.toLowerCase(), ...words.map((w) => w[0]!.toUpperCase() + w.slice(1))].join("");
}

/** The API routes of `app`: method, path and what their options declare. */
export function apiRoutes(app: AnyElysia) {
  return app.routes
    .filter((route) => API_PATH.test(route.path) && !SKIPPED_METHODS.has(route.method))
    .map((route) => ({ method: route.method, path: route.path, schemas: route.hooks as RouteSchemas }));
}

/** Builds the document for `app` (whose routes are all registered by now). */
export function openApiDocument(
  app: AnyElysia,
  options: { version: string; e2eProtocolVersions: readonly string[] },
): Record<string, unknown> {
  const { version } = options;
  const access = declaredAccess(app as never);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const { method, path: routePath, schemas } of apiRoutes(app)) {
    const path = routePath.replace(/:(\w+)/g, "{$1}");
    const level = access.get(`${method} ${routePath}`) ?? "public";
    const pathParameters = schemas.params
      ? parameters("path", schemas.params)
      : [...routePath.matchAll(/:(\w+)/g)].map((m) => ({
          name: m[1]!,
          in: "path",
          required: true,
          schema: { type: "string" },
        }));
    const operation: Record<string, unknown> = {
      operationId: operationId(method, path),
      ...(schemas.detail?.summary ? { summary: schemas.detail.summary } : {}),
      ...(schemas.detail?.description ? { description: schemas.detail.description } : {}),
      tags: [tagOf(path, level)],
      security: SECURITY[level],
      ...(level === "public" ? {} : { "x-outpost-access": level }),
    };
    const all = [
      ...pathParameters,
      ...parameters("query", schemas.query),
      ...parameters("header", schemas.headers),
    ];
    if (all.length > 0) operation.parameters = all;
    if (schemas.body) {
      operation.requestBody = {
        required: !(OptionalKind in schemas.body),
        content: content(path, schemas.body),
      };
    }
    operation.responses = responses(path, schemas.response);
    paths[path] ??= {};
    paths[path][method.toLowerCase()] = operation;
  }
  const protocols = options.e2eProtocolVersions.map((v) => `\`${v}\``).join(", ");
  return {
    openapi: "3.1.1",
    info: {
      title: "Outpost API",
      version,
      description:
        "The device API, the operator API (`/api/v1`), the JSON:API resources (`/api/json`) and the E2E run " +
        `API (\`/e2e\`, described as version ${E2E_API_VERSION}). E2E runners send the protocol version in ` +
        `\`X-E2E-Protocol-Version\`; this server accepts ${protocols}. ` +
        "Errors: docs/errors.md.",
      license: { name: "MIT", identifier: "MIT" },
    },
    servers: [{ url: "/" }],
    tags: [
      {
        name: "Device API",
        description: "What the agent calls: registration (public) and `?api_key=` routes",
      },
      {
        name: "Operator API",
        description: "API tokens (`Authorization: Bearer`) of viewers, operators and admins",
      },
      { name: "JSON:API", description: "`application/vnd.api+json` resources" },
      {
        name: "E2E",
        description: `The E2E run API (version ${E2E_API_VERSION}); runners send protocol ${protocols}`,
        "x-api-version": E2E_API_VERSION,
      },
    ],
    paths,
    components: {
      schemas: { Error: jsonSchema(ApiErrorSchema), JsonApiErrors: jsonSchema(JsonApiErrorsSchema) },
      securitySchemes: {
        apiToken: { type: "http", scheme: "bearer", description: "An API token (Settings → API tokens)" },
        deviceApiKey: {
          type: "apiKey",
          in: "query",
          name: "api_key",
          description: "The device's token, from registration",
        },
        e2eRunnerId: { type: "apiKey", in: "header", name: "X-E2E-Runner-ID" },
        e2eRunnerToken: { type: "http", scheme: "bearer", description: "The runner's token from E2E_CONFIG" },
      },
    },
  };
}
