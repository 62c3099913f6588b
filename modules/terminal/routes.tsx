import { Elysia } from "elysia";
import { outcomeFlash } from "../../ui/flash";
import { consolePages } from "../../ui/page";
import { noteAudit, noteChanges } from "../audit/service";
import { requireFreshFactor } from "../operators/service";
import { canOperate } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { setTerminalInputRecording, terminalInputRecording } from "../settings/service";
import { acceptReportedHostKey } from "./host-keys";
import {
  IdParams,
  SessionsQuery,
  TerminalButtonForm,
  type TerminalLimits,
  TerminalSettingsForm,
} from "./model";
import { openSession } from "./open-session";
import { PlaybackPage, SessionsPage } from "./pages/sessions";
import { readRecording } from "./recording";
import { endSession, sessionNotFound } from "./service";
import { getSession, listSessions } from "./sessions";

/** Console routes of the browser terminal: open a session, the sessions list, playback, host keys. */
export function terminalRoutes(ctx: AppContext, limits: TerminalLimits) {
  const { pageContext, htmlPage, redirectWithFlash } = consolePages(ctx.config);
  const { config, database } = ctx;
  const sql = database.sql;
  return new Elysia({ name: "terminal" })
    .use(ctx.access)
    .post(
      "/devices/:id/terminal",
      async ({ params, principal, set, request }) => {
        if (principal?.kind !== "session") {
          throw new AppError(
            403,
            "session_required",
            "Terminals are opened from the console, by a signed-in operator",
          );
        }
        // The role may ask for a fresh second factor first (the page's script follows details.verify_url).
        await requireFreshFactor(database.db, principal, `/devices/${params.id}?tab=terminal`);
        set.status = 201;
        return openSession(ctx, limits, request, params.id, {
          operatorId: principal.operatorId,
          email: principal.email,
        });
      },
      { access: "operator", params: IdParams, body: TerminalButtonForm },
    )
    .get(
      "/terminal/sessions",
      async ({ principal, query, request }) => {
        const page = pageContext(request, principal);
        const filter = {
          device: query.device || undefined,
          operator: query.operator || undefined,
        };
        const list = await listSessions(sql, {
          deviceId: filter.device,
          operator: filter.operator,
          before: query.before || undefined,
        });
        return htmlPage(
          page,
          <SessionsPage
            ctx={page}
            sessions={list.sessions}
            next={list.next}
            filter={filter}
            recordsInput={await terminalInputRecording(sql)}
            retentionDays={config.terminalRecordingRetentionDays}
          />,
        );
      },
      { access: "viewer", query: SessionsQuery },
    )
    .get(
      "/terminal/sessions/:id",
      async ({ params, principal, request }) => {
        const session = await getSession(sql, params.id);
        if (!session) throw sessionNotFound();
        const page = pageContext(request, principal);
        return htmlPage(page, <PlaybackPage ctx={page} session={session} canEnd={canOperate(principal)} />);
      },
      { access: "viewer" },
    )
    .get(
      "/terminal/sessions/:id/recording.cast",
      async ({ params }) => {
        const cast = await readRecording(sql, params.id);
        if (cast === undefined) throw sessionNotFound();
        return new Response(cast, {
          headers: {
            "content-type": "application/x-asciicast; charset=utf-8",
            "content-disposition": `attachment; filename="outpost-terminal-${params.id}.cast"`,
            "cache-control": "private, no-store",
          },
        });
      },
      { access: "viewer" },
    )
    .post(
      "/terminal/sessions/:id/end",
      async ({ params, request }) => {
        const session = await getSession(sql, params.id);
        if (!session) throw sessionNotFound();
        const ended = await endSession(sql, session.id, "ended_by_operator");
        noteAudit(request, { details: { device_id: session.deviceId, ended } });
        return redirectWithFlash(
          `/terminal/sessions/${session.id}`,
          { kind: "success", text: ended ? "The session was ended." : "The session had already ended." },
          request,
        );
      },
      { access: "operator", params: IdParams, body: TerminalButtonForm },
    )
    .post(
      "/terminal/settings",
      async ({ body, principal, request }) => {
        const value = body.record_input;
        const before = await terminalInputRecording(sql);
        await setTerminalInputRecording(
          sql,
          value === "on",
          principal?.kind === "session" ? principal.email : "token",
        );
        noteChanges(request, { record_input: before }, { record_input: value === "on" });
        return redirectWithFlash(
          "/terminal/sessions",
          {
            kind: "success",
            text: value === "on" ? "New sessions record keyboard input." : "New sessions record output only.",
          },
          request,
        );
      },
      { access: "admin", body: TerminalSettingsForm },
    )
    .post(
      "/devices/:id/host-key/accept",
      async ({ params, principal, request }) => {
        const by = principal?.kind === "session" ? principal.email : "admin";
        const accepted = await acceptReportedHostKey(sql, params.id, by);
        noteAudit(request, { details: { accepted } });
        return redirectWithFlash(
          `/devices/${params.id}?tab=terminal`,
          outcomeFlash(accepted, "The new SSH host key is pinned.", "There was no new host key to accept."),
          request,
        );
      },
      { access: "admin", params: IdParams, body: TerminalButtonForm },
    );
}
