import { Elysia } from "elysia";
import type { AppContext } from "../platform/context";
import { answeredStatus, clientAddress, requestIdOf } from "../platform/http";
import { AUDITED_ROUTES, type AuditAction } from "./actions";
import { type AuditEventInput, auditNoteOf, recordAudit } from "./service";

const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The kept body fields: short strings, numbers, booleans; lists as their first 20 strings. */
function detailsOf(body: unknown, fields: string[] | undefined): Record<string, unknown> {
  const details: Record<string, unknown> = {};
  if (!fields || typeof body !== "object" || body === null) return details;
  for (const field of fields) {
    const value = (body as Record<string, unknown>)[field];
    if (typeof value === "string") details[field] = value.slice(0, 200);
    else if (typeof value === "number" || typeof value === "boolean") details[field] = value;
    else if (Array.isArray(value))
      details[field] = value
        .filter((v) => typeof v === "string")
        .slice(0, 20)
        .map((v) => v.slice(0, 100));
  }
  return details;
}

function targetOf(action: AuditAction, params: Record<string, string> | undefined): string | null {
  if (!action.target) return null;
  const [kind, param] = action.target.split(":") as [string, string];
  const value = params?.[param];
  return value ? `${kind}:${value.slice(0, 200)}` : null;
}

/**
 * Records every state-changing request of an operator, API token or E2E runner after it is answered
 * (refusals included): who, which action (actions.ts), on what, with which status. Off the request's
 * path: a failed write is logged, never turned into an error for the caller. A clean stop waits for the
 * writes under way (`ctx.auditWrites`).
 */
export function auditRecorder(ctx: AppContext) {
  /** The caller's address, read while the connection is there (after the response it is gone). */
  const addresses = new WeakMap<Request, string>();
  /** Each audited request's write, counted from its arrival (a clean stop waits for it: writes.ts). */
  const writes = new WeakMap<Request, (write: Promise<unknown>) => void>();
  const audited = (request: Request, route: string | undefined) =>
    route && !READ_METHODS.has(request.method) ? AUDITED_ROUTES[`${request.method} ${route}`] : undefined;
  return new Elysia({ name: "audit-recorder" })
    .onTransform({ as: "global" }, ({ request, route, server }) => {
      if (!audited(request, route)) return;
      addresses.set(request, clientAddress(request, server));
      writes.set(request, ctx.auditWrites.begin());
    })
    .onAfterResponse({ as: "global" }, (context) => {
      const { request, route, params, body } = context;
      const action = audited(request, route);
      const finish = writes.get(request) ?? (action ? ctx.auditWrites.begin() : undefined);
      writes.delete(request);
      if (!action || !finish) {
        finish?.(Promise.resolve());
        return;
      }
      const status = answeredStatus(context);
      const record = async () => {
        // A request refused before its access check ran (a NUL in a form field) has its caller
        // resolved now; one refused by the check (401) has none, a runner's is named by its id.
        const runner = route.startsWith("/e2e/") ? request.headers.get("x-e2e-runner-id") : null;
        const principal =
          ctx.access.principalOf(request) ??
          (status === 401 || runner ? undefined : await ctx.access.identify(request));
        let actor: Pick<AuditEventInput, "actor" | "actorKind">;
        if (principal)
          actor =
            principal.kind === "session"
              ? { actorKind: "operator", actor: principal.email }
              : { actorKind: "token", actor: `token ${principal.name}` };
        else if (runner && status !== 401) actor = { actorKind: "runner", actor: runner };
        else if (route === "/setup") actor = { actorKind: "anonymous", actor: "first-run setup" };
        else return; // nobody we could name: an anonymous probe refused with 401
        // What the handler noted (the id it created, the fields it changed) completes what the route says.
        const note = auditNoteOf(request);
        await recordAudit(ctx.database, {
          ...actor,
          action: note?.action ?? action.action,
          target: note?.target ?? targetOf(action, params as Record<string, string> | undefined),
          status,
          address: addresses.get(request) ?? null,
          details: { ...detailsOf(body, action.fields), ...note?.details },
        });
      };
      finish(
        record().catch((error) =>
          ctx.logger.error(
            { err: error, action: action.action, requestId: requestIdOf(request) },
            "audit write failed",
          ),
        ),
      );
    });
}
