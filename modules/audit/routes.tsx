import type { Static } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { consolePages } from "../../ui/page";
import type { AppContext } from "../platform/context";
import { type CsvValue, csvResponse, keysetBatches } from "../platform/csv";
import { badRequest } from "../platform/errors";
import { errorReplies } from "../platform/schemas";
import { AuditListReply, AuditPageQuery, AuditQuery } from "./model";
import { AuditPage } from "./pages";
import { type AuditActorKind, type AuditEvent, type AuditFilters, listAudit } from "./service";

const text = (value: string | undefined) =>
  value !== undefined && value.trim() !== "" ? value.trim().slice(0, 320) : undefined;

function time(value: string | undefined, field: string): Date | undefined {
  const raw = text(value);
  if (!raw) return undefined;
  // A datetime-local value has no zone: it is UTC here, as everywhere in Outpost.
  const date = new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(raw) ? raw : `${raw}Z`);
  if (Number.isNaN(date.getTime())) throw badRequest(`${field} must be an ISO 8601 time`, { field });
  return date;
}

function filtersOf(query: Static<typeof AuditPageQuery>): AuditFilters {
  return {
    actor: text(query.actor),
    action: text(query.action),
    target: text(query.target),
    from: time(query.from, "from"),
    to: time(query.to, "to"),
  };
}

const eventJson = (event: AuditEvent): Static<typeof AuditListReply>["data"][number] => ({
  id: event.id,
  at: event.at.toISOString(),
  actor_kind: event.actorKind as AuditActorKind,
  actor: event.actor,
  action: event.action,
  target: event.target,
  status: event.status,
  address: event.address,
  details: event.details,
});

/** The CSV's columns: the API's fields, `details` as JSON. */
const CSV_COLUMNS = ["at", "actor_kind", "actor", "action", "target", "status", "address", "details", "id"];

/** The query string of the filters given (the page's next-page and CSV links carry it). */
function filterQuery(query: Static<typeof AuditPageQuery>): string {
  const params = new URLSearchParams();
  for (const key of ["actor", "action", "target", "from", "to"] as const) {
    const value = text(query[key]);
    if (value) params.set(key, value);
  }
  return params.toString();
}

/** The audit log: `/audit` (page), `/audit.csv` and `GET /api/v1/audit` (JSON), admins only. */
export function auditRoutes(ctx: AppContext) {
  const { pageContext, htmlPage } = consolePages(ctx.config);
  const { database } = ctx;
  return new Elysia({ name: "audit" })
    .use(ctx.access)
    .get(
      "/audit",
      async ({ request, principal, query }) => {
        const page = pageContext(request, principal);
        const filters = filtersOf(query);
        const cursor = text(query.cursor);
        const { events, nextCursor } = await listAudit(database, filters, { cursor });
        return htmlPage(
          page,
          <AuditPage ctx={page} props={{ filters, events, nextCursor, query: filterQuery(query) }} />,
        );
      },
      { access: "admin", query: AuditPageQuery },
    )
    .get(
      "/audit.csv",
      ({ query }) => {
        // Every event the filters match, newest first, 500 a batch (the page's keyset).
        const filters = filtersOf(query);
        const batches = keysetBatches(
          async (cursor: string | undefined) => {
            const { events, nextCursor } = await listAudit(database, filters, { limit: 500, cursor });
            return { items: events, next: nextCursor };
          },
          (event) => {
            const row: Record<string, unknown> = eventJson(event);
            return CSV_COLUMNS.map((key) =>
              key === "details" ? JSON.stringify(row.details) : (row[key] as CsvValue),
            );
          },
        );
        return csvResponse(`audit-${new Date().toISOString().slice(0, 10)}.csv`, CSV_COLUMNS, batches);
      },
      { access: "admin", query: AuditPageQuery },
    )
    .get(
      "/api/v1/audit",
      async ({ query }): Promise<Static<typeof AuditListReply>> => {
        const { events, nextCursor } = await listAudit(database, filtersOf(query), {
          limit: query.limit === undefined ? undefined : Number(query.limit),
          cursor: text(query.cursor),
        });
        return { data: events.map(eventJson), meta: { next_cursor: nextCursor ?? null } };
      },
      {
        access: "admin",
        detail: { summary: "The audit log, newest first, filtered, a keyset page at a time" },
        query: AuditQuery,
        response: { 200: AuditListReply, ...errorReplies(400, 401, 403) },
      },
    );
}
