import { Elysia } from "elysia";
import { htmlPage, pageContext } from "../../ui/page";
import type { AppContext } from "../platform/context";
import { badRequest } from "../platform/errors";
import { AuditPage } from "./pages";
import { type AuditEvent, type AuditFilters, listAudit } from "./service";

const text = (value: unknown) =>
  typeof value === "string" && value.trim() !== "" ? value.trim().slice(0, 320) : undefined;

function time(value: unknown, field: string): Date | undefined {
  const raw = text(value);
  if (!raw) return undefined;
  // A datetime-local value has no zone: it is UTC here, as everywhere in Outpost.
  const date = new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(raw) ? raw : `${raw}Z`);
  if (Number.isNaN(date.getTime())) throw badRequest(`${field} must be an ISO 8601 time`, { field });
  return date;
}

function filtersOf(query: Record<string, unknown>): AuditFilters {
  return {
    actor: text(query.actor),
    action: text(query.action),
    target: text(query.target),
    from: time(query.from, "from"),
    to: time(query.to, "to"),
  };
}

const eventJson = (event: AuditEvent) => ({
  id: event.id,
  at: event.at.toISOString(),
  actor_kind: event.actorKind,
  actor: event.actor,
  action: event.action,
  target: event.target,
  status: event.status,
  address: event.address,
  details: event.details,
});

/** The audit log: `/audit` (page) and `GET /api/v1/audit` (JSON), admins only. */
export function auditRoutes(ctx: AppContext) {
  const { config, database } = ctx;
  return new Elysia({ name: "audit" })
    .use(ctx.access)
    .get(
      "/audit",
      async ({ request, principal, query }) => {
        const page = pageContext(request, principal, config.secretKey);
        const filters = filtersOf(query);
        const cursor = text(query.cursor);
        const { events, nextCursor } = await listAudit(database, filters, { cursor });
        const params = new URLSearchParams();
        for (const key of ["actor", "action", "target", "from", "to"]) {
          const value = text(query[key]);
          if (value) params.set(key, value);
        }
        return htmlPage(
          page,
          <AuditPage ctx={page} props={{ filters, events, nextCursor, query: params.toString() }} />,
        );
      },
      { access: "admin" },
    )
    .get(
      "/api/v1/audit",
      async ({ query }) => {
        const limit = query.limit === undefined ? undefined : Number(query.limit);
        if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 500))
          throw badRequest("limit must be an integer from 1 to 500", { field: "limit" });
        const { events, nextCursor } = await listAudit(database, filtersOf(query), {
          limit,
          cursor: text(query.cursor),
        });
        return { data: events.map(eventJson), meta: { next_cursor: nextCursor ?? null } };
      },
      { access: "admin" },
    );
}
