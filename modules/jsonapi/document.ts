import type { Principal } from "../platform/access";
import { AppError, badRequest } from "../platform/errors";
import { isPlainObject, jsonBody } from "../platform/json-body";

/**
 * JSON:API document helpers for resources other features register under /api/json (alerts).
 * TODO(lead): routes.ts keeps its own copies of these; fold them into this file when nobody else
 * is editing routes.ts (left alone here to keep the alerts branch's diff to existing files small).
 */
export const JSONAPI_PREFIX = "/api/json";
export const JSONAPI_MEDIA_TYPE = "application/vnd.api+json";

export function jsonApiDocument(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": JSONAPI_MEDIA_TYPE } });
}

/** `filter[x]`, `page[size]` … read verbatim from the URL. */
export function jsonApiQuery(request: Request): URLSearchParams {
  return new URL(request.url).searchParams;
}

/** `page[size]` (or `page[limit]`), a positive integer capped at `max`. */
export function jsonApiPageSize(params: URLSearchParams, fallback = 50, max = 500): number {
  const raw = params.get("page[size]") ?? params.get("page[limit]");
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1)
    throw badRequest("page[size] must be a positive integer", { field: "page[size]" });
  return Math.min(value, max);
}

/** `data` of a request document of `type`: 400 when malformed, 409 `type_mismatch` for another type. */
export function jsonApiResource(
  raw: unknown,
  type: string,
): { id?: unknown; attributes: Record<string, unknown> } {
  const body = jsonBody(raw);
  if (!isPlainObject(body) || !isPlainObject(body.data))
    throw badRequest("The body must be a JSON:API document with data", { field: "data" });
  if (body.data.type !== type)
    throw new AppError(409, "type_mismatch", `data.type must be ${type}`, { field: "data.type" });
  const attributes = body.data.attributes ?? {};
  if (!isPlainObject(attributes))
    throw badRequest("data.attributes must be an object", { field: "data.attributes" });
  return { id: body.data.id, attributes };
}

/** Who did it, for the records: an operator's email or `token:<name>`. */
export function actorLabel(principal: Principal | undefined): string | undefined {
  if (!principal) return undefined;
  return principal.kind === "session" ? principal.email : `token:${principal.name}`;
}
