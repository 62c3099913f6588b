/**
 * The OpenAPI 3.1 document of Outpost's APIs (`/api/v1`, `/api/json`, `/e2e`), generated from the
 * app's route table and the routes' own TypeBox schemas (@elysiajs/openapi's generator, with the
 * body and reply schemas in references.ts), plus what a generator cannot know: who may call each
 * route (from its `access` declaration), the error shapes and examples for the device API.
 */
import { toOpenAPISchema } from "@elysiajs/openapi";
import type { AnyElysia } from "elysia";
import { type Access, declaredAccess } from "../platform/access";
import { NAMED_SCHEMAS, REFERENCES } from "./references";

export const API_PATH = /^\/(api\/v1|api\/json|e2e\/)/;
const E2E_PROTOCOL_VERSION = "1.0.0";

type Operation = Record<string, unknown> & {
  security?: unknown;
  responses?: Record<string, unknown>;
  tags?: string[];
};

const SECURITY: Record<Access, Record<string, string[]>[]> = {
  public: [],
  device: [{ deviceApiKey: [] }],
  e2e: [{ e2eRunnerId: [], e2eRunnerToken: [] }],
  viewer: [{ apiToken: [] }],
  operator: [{ apiToken: [] }],
  admin: [{ apiToken: [] }],
};

const ERROR = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      properties: {
        code: { type: "string", description: "One of docs/errors.md; each code has one HTTP status" },
        message: { type: "string" },
        details: { description: "Often `{field}` naming the offending field" },
      },
    },
  },
};
const JSONAPI_ERRORS = {
  type: "object",
  required: ["errors"],
  properties: {
    errors: {
      type: "array",
      items: {
        type: "object",
        properties: {
          status: { type: "string" },
          code: { type: "string" },
          title: { type: "string" },
          detail: { type: "string" },
          source: { type: "object" },
          meta: {},
        },
      },
    },
  },
};

const EXAMPLES: Record<string, Record<string, unknown>> = {
  "post /api/v1/devices/register": {
    mac_address: "02:AB:00:00:00:01",
    product_name: "edge-gateway",
    metadata: { hostname: "pump7", ip_address: "192.0.2.10", name: "pump-station-7" },
    device_secret: "x3Jq1v8Zr0mYkP2tA7cN5wE9uH4sL6dB0fG1hK3jM5n",
  },
  "post /api/v1/devices/{device_id}/heartbeat": {
    telemetry: {
      device: { uptime_seconds: 5120 },
      scripts: {
        cpu: { data: { status: "success", validation_status: "valid", output: { usage_pct: 12.5 } } },
      },
      meta: { collected_at: "2026-11-24T12:00:00Z" },
    },
    connection_status: { active: false },
  },
  "post /api/v1/devices/{device_id}/command_results": {
    results: [{ command_id: "0193a1b2-0000-7000-8000-000000000001", status: "OK", output: { scripts: [] } }],
  },
};

/** Builds the document for `app` (whose routes are all registered by now). */
export function openApiDocument(app: AnyElysia, version: string): Record<string, unknown> {
  const access = declaredAccess(app as never);
  // The generator writes schemas into the hooks it reads: give it copies, never the live routes.
  const view = {
    getGlobalRoutes: () =>
      app.routes.map((route) => ({ ...route, hooks: { ...((route.hooks as object) ?? {}) } })),
  } as unknown as AnyElysia;
  const { paths, components } = toOpenAPISchema(
    view,
    { paths: [/^(?!\/(api\/v1|api\/json|e2e\/))/], staticFile: true },
    REFERENCES as never,
    undefined,
    "3.1.1",
  );
  for (const [path, item] of Object.entries(paths as Record<string, Record<string, Operation>>)) {
    const routePath = path.replace(/\{(\w+)\}/g, ":$1");
    for (const [method, operation] of Object.entries(item)) {
      const level = access.get(`${method.toUpperCase()} ${routePath}`) ?? "public";
      operation.security = SECURITY[level];
      operation.tags = [
        path.startsWith("/e2e")
          ? "E2E"
          : path.startsWith("/api/json")
            ? "JSON:API"
            : level === "device" || path === "/api/v1/devices/register"
              ? "Device API"
              : "Operator API",
      ];
      if (level !== "public") operation["x-outpost-access"] = level;
      operation.responses = {
        ...(operation.responses ?? { 200: { description: "Success" } }),
        default: {
          description: "An error (docs/errors.md)",
          content: {
            [path.startsWith("/api/json") ? "application/vnd.api+json" : "application/json"]: {
              schema: {
                $ref: path.startsWith("/api/json")
                  ? "#/components/schemas/JsonApiErrors"
                  : "#/components/schemas/Error",
              },
            },
          },
        },
      };
      // The routes parse their bodies themselves, so the generator knows a body exists but not its
      // media type: name it, with the schema the route checks it against.
      const reference = (REFERENCES as Record<string, Record<string, { body?: object }>>)[routePath]?.[
        method
      ];
      if (reference?.body) {
        const media = path.startsWith("/api/json") ? "application/vnd.api+json" : "application/json";
        const example = EXAMPLES[`${method} ${path}`];
        operation.requestBody = {
          required: true,
          content: {
            [media]: { schema: JSON.parse(JSON.stringify(reference.body)), ...(example ? { example } : {}) },
          },
        };
      }
    }
  }
  return {
    openapi: "3.1.1",
    info: {
      title: "Outpost API",
      version,
      description:
        "The device API, the operator API (`/api/v1`), the JSON:API resources (`/api/json`) and the E2E run API (`/e2e`, protocol version " +
        `${E2E_PROTOCOL_VERSION}, sent by runners in \`X-E2E-Protocol-Version\`). Errors: docs/errors.md.`,
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
        description: `The E2E run API, protocol version ${E2E_PROTOCOL_VERSION}`,
        "x-api-version": E2E_PROTOCOL_VERSION,
      },
    ],
    paths,
    components: {
      ...components,
      schemas: {
        ...(components.schemas ?? {}),
        ...NAMED_SCHEMAS,
        Error: ERROR,
        JsonApiErrors: JSONAPI_ERRORS,
      },
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
