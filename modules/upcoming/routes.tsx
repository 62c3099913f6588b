import { Elysia } from "elysia";
import { htmlPage, pageContext } from "../../ui/page";
import type { AppContext } from "../platform/context";
import { UPCOMING_SECTIONS, UpcomingPage } from "./pages";

/** The sections still waiting for their feature: a page each that says so. */
export function upcomingRoutes(ctx: AppContext) {
  const app = new Elysia({ name: "upcoming" }).use(ctx.access);
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
