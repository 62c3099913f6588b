import { Elysia, t } from "elysia";
import { consolePages } from "../../ui/page";
import { noteAudit } from "../audit/service";
import type { Principal } from "../platform/access";
import { canOperate, principalLabel } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import type { Overlap } from "./create";
import { formBody, formValues } from "./form";
import { NewRolloutQuery, RolloutButtonForm, RolloutForm, TARGET_STATES, type TargetState } from "./model";
import { RolloutsPage } from "./pages/list";
import { NewRolloutPage } from "./pages/new";
import { type ProgressProps, RolloutLive, RolloutPage } from "./pages/progress";
import {
  controlRollout,
  createRollout,
  creationAuditDetails,
  getRollout,
  listRollouts,
  listTargets,
  type RolloutControl,
} from "./service";

const PagePath = t.Object({ id: t.String({ description: "The rollout's id" }) });
const ProgressQuery = t.Object(
  { state: t.Optional(t.String({ maxLength: 20 })), after: t.Optional(t.String({ maxLength: 200 })) },
  { additionalProperties: true },
);
const PAGE_SIZE = 50;

/** The console's rollout pages and forms (docs/fleet.md, _Rollouts_). */
export function rolloutConsoleRoutes(ctx: AppContext) {
  const { pageContext, htmlPage, redirectWithFlash } = consolePages(ctx.config);
  const { database, clock } = ctx;
  const sql = database.sql;
  const now = () => new Date(clock.now());

  async function progressProps(
    id: string,
    query: { state?: string; after?: string },
    principal: Principal | undefined,
  ): Promise<ProgressProps> {
    const rollout = await getRollout(sql, id);
    const state = (TARGET_STATES as readonly string[]).includes(query.state ?? "")
      ? (query.state as TargetState)
      : undefined;
    const cursor = query.after || undefined;
    const page = await listTargets(sql, rollout.id, { state, cursor, limit: PAGE_SIZE });
    return {
      rollout,
      targets: page.targets,
      nextCursor: page.nextCursor,
      cursor,
      state,
      canOperate: canOperate(principal),
    };
  }

  const control =
    (action: RolloutControl, done: string) =>
    async ({ params, request }: { params: { id: string }; request: Request }) => {
      const back = `/rollouts/${encodeURIComponent(params.id)}`;
      try {
        await controlRollout(database, params.id, action, now());
      } catch (error) {
        if (error instanceof AppError && error.status === 409)
          return redirectWithFlash(back, { kind: "error", text: error.message });
        throw error;
      }
      const rollout = await getRollout(sql, params.id);
      noteAudit(request, { details: { name: rollout.name, status: rollout.status } });
      return redirectWithFlash(back, { kind: "success", text: done });
    };

  return new Elysia({ name: "rollouts-console" })
    .use(ctx.access)
    .get(
      "/rollouts",
      async ({ request, principal, query }) => {
        const page = pageContext(request, principal);
        const list = await listRollouts(sql, { cursor: query.after || undefined, limit: PAGE_SIZE });
        return htmlPage(
          page,
          <RolloutsPage
            ctx={page}
            props={{
              rollouts: list.rollouts,
              nextCursor: list.nextCursor,
              canOperate: canOperate(principal),
            }}
          />,
        );
      },
      {
        access: "viewer",
        query: t.Object({ after: t.Optional(t.String({ maxLength: 200 })) }, { additionalProperties: true }),
      },
    )
    .get(
      "/rollouts/new",
      ({ request, principal, query }) => {
        const page = pageContext(request, principal);
        const values = formValues({ q: query.q, view: query.view, ids: query.ids });
        return htmlPage(page, <NewRolloutPage ctx={page} props={{ values }} />);
      },
      { access: "operator", query: NewRolloutQuery },
    )
    .post(
      "/rollouts",
      async ({ request, principal, body }) => {
        const page = pageContext(request, principal);
        const values = formValues(body);
        try {
          const id = await createRollout(database, formBody(values, body.confirm_overlap === "yes", now()), {
            createdBy: principalLabel(principal) ?? "unknown",
            now: now(),
            onlineWindowSeconds: (await ctx.settings.device()).onlineWindowSeconds,
          });
          const rollout = await getRollout(sql, id);
          noteAudit(request, {
            target: `rollout:${id}`,
            details: creationAuditDetails(rollout, body.confirm_overlap === "yes"),
          });
          return redirectWithFlash(`/rollouts/${id}`, {
            kind: "success",
            text: `Rollout started on ${rollout.total} devices.`,
          });
        } catch (error) {
          if (!(error instanceof AppError) || error.status >= 500) throw error;
          const field = (error.details as { field?: string } | undefined)?.field;
          const overlap = error.code === "rollout_overlap" ? (error.details as Overlap) : undefined;
          return htmlPage(
            page,
            <NewRolloutPage
              ctx={page}
              props={{ values, error: { message: error.message, field }, overlap }}
            />,
            error.status === 409 ? 409 : 422,
          );
        }
      },
      { access: "operator", body: RolloutForm },
    )
    .get(
      "/rollouts/:id",
      async ({ request, principal, params, query }) => {
        const page = pageContext(request, principal);
        const props = await progressProps(params.id, query, principal);
        return htmlPage(page, <RolloutPage ctx={page} props={props} />);
      },
      { access: "viewer", params: PagePath, query: ProgressQuery },
    )
    .get(
      "/rollouts/:id/progress",
      async ({ request, principal, params, query }) => {
        const page = pageContext(request, principal);
        const props = await progressProps(params.id, query, principal);
        return htmlPage({ flash: undefined }, <RolloutLive ctx={page} props={props} />);
      },
      { access: "viewer", params: PagePath, query: ProgressQuery },
    )
    .post("/rollouts/:id/pause", control("pause", "Paused: no more devices are started."), {
      access: "operator",
      params: PagePath,
      body: RolloutButtonForm,
    })
    .post("/rollouts/:id/resume", control("resume", "Resumed."), {
      access: "operator",
      params: PagePath,
      body: RolloutButtonForm,
    })
    .post("/rollouts/:id/cancel", control("cancel", "Cancelled: devices not reached are skipped."), {
      access: "operator",
      params: PagePath,
      body: RolloutButtonForm,
    });
}
