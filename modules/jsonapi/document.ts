import type { Principal } from "../platform/access";
import { AppError, badRequest } from "../platform/errors";
import { jsonBody } from "../platform/json-body";
import { firstInvalidField } from "../platform/schemas";
import { type ResourceDocument, resourceDocument } from "./model";

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

const DOCUMENT_FIELDS = ["data", "data.attributes", "data.relationships"];

/** The document's data (ResourceDocument): 400 for its shape, 409 when it names another resource type. */
export function jsonApiResource(
  raw: unknown,
  type: string,
): { id?: unknown; attributes: Record<string, unknown>; relationships: Record<string, unknown> } {
  const body = jsonBody(raw);
  const field = resourceDocument.Check(body)
    ? undefined
    : firstInvalidField(resourceDocument, body, DOCUMENT_FIELDS);
  if (field === "" || field === "data")
    throw badRequest("The body must be a JSON:API document with data", { field: "data" });
  const { data } = body as ResourceDocument;
  if (data.type !== type)
    throw new AppError(409, "type_mismatch", `data.type must be ${type}`, { field: "data.type" });
  if (field) throw badRequest(`${field} must be an object`, { field });
  return { id: data.id, attributes: data.attributes ?? {}, relationships: data.relationships ?? {} };
}

/** Who did it, for the records: an operator's email or `token:<name>`. */
export function actorLabel(principal: Principal | undefined): string | undefined {
  if (!principal) return undefined;
  return principal.kind === "session" ? principal.email : `token:${principal.name}`;
}
