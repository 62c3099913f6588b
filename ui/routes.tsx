import { Elysia, t } from "elysia";
import type { AppContext } from "../modules/platform/context";
import { notFound } from "../modules/platform/errors";
import { assetResponse } from "./assets";

/** The kit's static assets (CSS, scripts, vendored htmx and uPlot). */
export function uiRoutes(ctx: AppContext) {
  return new Elysia({ name: "ui" }).use(ctx.access).get(
    "/assets/:name",
    ({ params, request }) => {
      const response = assetResponse(params.name, request);
      if (!response) throw notFound("No such asset");
      return response;
    },
    { access: "public", params: t.Object({ name: t.String({ maxLength: 100 }) }) },
  );
}
