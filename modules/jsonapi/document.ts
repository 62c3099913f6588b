import type { Principal } from "../platform/access";
import { badRequest } from "../platform/errors";
import type { HttpErrorMapper } from "../platform/http";
import { isPlainObject } from "../platform/json-body";

/**
 * JSON:API documents under /api/json: the machinery each feature's resource is built with (devices,
 * pending_commands, telemetry_events, alerts, e2e … each in its feature's jsonapi.ts).
 */
export const JSONAPI_PREFIX = "/api/json";
export const JSONAPI_MEDIA_TYPE = "application/vnd.api+json";

export function jsonApiDocument(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": JSONAPI_MEDIA_TYPE } });
}

/** The keyset page parameters of a validated list query (jsonapi/model.ts `pageQuery`). */
export interface PageParams {
  "page[size]"?: string;
  "page[limit]"?: string;
  "page[after]"?: string;
}

/** `page[size]` (or `page[limit]`), a positive integer capped at `max`. */
export function jsonApiPageSize(query: PageParams, fallback = 50, max = 500): number {
  const raw = query["page[size]"] ?? query["page[limit]"];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1)
    throw badRequest("page[size] must be a positive integer", { field: "page[size]" });
  return Math.min(value, max);
}

/** `links.next`: this request's URL with `page[after]` set to the next page's cursor, or null on the last. */
export function jsonApiNextLink(request: Request, cursor: string | undefined): string | null {
  if (!cursor) return null;
  const url = new URL(request.url);
  url.searchParams.set("page[after]", cursor);
  return `${url.pathname}${url.search}`;
}

/** Who did it, for the records: an operator's email or `token:<name>`. */
export function actorLabel(principal: Principal | undefined): string | undefined {
  if (!principal) return undefined;
  return principal.kind === "session" ? principal.email : `token:${principal.name}`;
}

/** Errors under /api/json as JSON:API error documents: `{errors:[{status, code, title, detail}]}`. */
export const jsonApiErrorMapper: HttpErrorMapper = (error, request) => {
  const { pathname } = new URL(request.url);
  if (pathname !== JSONAPI_PREFIX && !pathname.startsWith(`${JSONAPI_PREFIX}/`)) return undefined;
  const detail =
    error.status === 403 && error.code === "forbidden"
      ? "JSON:API access is forbidden for your role"
      : error.message;
  const entry: Record<string, unknown> = {
    status: String(error.status),
    code: error.code,
    title: error.message,
    detail,
  };
  const field =
    isPlainObject(error.details) && typeof error.details.field === "string" ? error.details.field : undefined;
  if (field) entry.source = { parameter: field };
  if (error.details !== undefined) entry.meta = error.details;
  return new Response(JSON.stringify({ errors: [entry] }), {
    status: error.status,
    headers: { "content-type": JSONAPI_MEDIA_TYPE, ...(error.headers ?? {}) },
  });
};
