import { Elysia, t } from "elysia";
import type { AppContext } from "../modules/platform/context";
import { notFound } from "../modules/platform/errors";
import { assetResponse } from "./assets";
import { htmlPage, pageContext } from "./page";
import { UPCOMING_SECTIONS, UpcomingPage } from "./pages/upcoming";

/** Static assets and the sections still waiting for their feature. */
export function uiRoutes(ctx: AppContext) {
  const app = new Elysia({ name: "ui" }).use(ctx.access).get(
    "/assets/:name",
    ({ params, request }) => {
      const response = assetResponse(params.name, request);
      if (!response) throw notFound("No such asset");
      return response;
    },
    { access: "public", params: t.Object({ name: t.String({ maxLength: 100 }) }) },
  );
  for (const path of Object.keys(UPCOMING_SECTIONS)) {
    app.get(
      path,
      ({ request, principal }) => {
        const page = pageContext(request, principal, ctx.config.secretKey);
        return htmlPage(page, <UpcomingPage ctx={page} path={path} />);
      },
      { access: "viewer" },
    );
  }
  return app;
}
