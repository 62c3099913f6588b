import type { Principal } from "../platform/access";
import { badRequest } from "../platform/errors";

/** JSON:API documents under /api/json: the helpers of this module's routes and of other features' resources (alerts). */
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

/** Who did it, for the records: an operator's email or `token:<name>`. */
export function actorLabel(principal: Principal | undefined): string | undefined {
  if (!principal) return undefined;
  return principal.kind === "session" ? principal.email : `token:${principal.name}`;
}
