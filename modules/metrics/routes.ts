import { timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import type { AppContext } from "../platform/context";
import type { Logger } from "../platform/logger";
import { METRICS_CONTENT_TYPE } from "../platform/metrics";
import { scrape } from "./scrape";

const sha = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest();

function bearerMatches(header: string | null, token: string): boolean {
  const given = /^Bearer (.+)$/i.exec(header ?? "")?.[1] ?? "";
  return timingSafeEqual(sha(given), sha(token));
}

/**
 * `GET /metrics` on the main port, only with `METRICS_TOKEN` (Bearer). Without a token, or when
 * METRICS_PORT moves metrics to their own listener, the main port answers 404: never public.
 */
export function metricsRoutes(ctx: AppContext) {
  const { config } = ctx;
  return new Elysia({ name: "metrics" }).use(ctx.access).get(
    "/metrics",
    async ({ request }) => {
      // Plain-text answers: this is for Prometheus, not a browser (no sign-in page, no redirect).
      if (!config.metricsToken || config.metricsPort !== undefined)
        return new Response("not found\n", { status: 404, headers: { "content-type": "text/plain" } });
      if (!bearerMatches(request.headers.get("authorization"), config.metricsToken))
        return new Response("metrics need the METRICS_TOKEN bearer token\n", {
          status: 401,
          headers: { "content-type": "text/plain", "www-authenticate": 'Bearer realm="outpost-metrics"' },
        });
      return new Response(await scrape(ctx), { headers: { "content-type": METRICS_CONTENT_TYPE } });
    },
    { access: "public" },
  );
}

/** The separate metrics listener (METRICS_HOST:METRICS_PORT): `/metrics` only, no token. */
export function startMetricsServer(
  ctx: Pick<AppContext, "config" | "database" | "settings" | "fleetCounts">,
  logger: Logger,
) {
  const server = Bun.serve({
    hostname: ctx.config.metricsHost,
    port: ctx.config.metricsPort,
    async fetch(request) {
      if (new URL(request.url).pathname !== "/metrics") return new Response("not found\n", { status: 404 });
      try {
        return new Response(await scrape(ctx), { headers: { "content-type": METRICS_CONTENT_TYPE } });
      } catch (error) {
        logger.error({ err: error }, "metrics scrape failed");
        return new Response("scrape failed\n", { status: 500 });
      }
    },
  });
  logger.info({ host: ctx.config.metricsHost, port: server.port }, "metrics listening");
  return server;
}
