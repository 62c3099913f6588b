import { Elysia } from "elysia";
import { runsWorker } from "./config";
import type { AppContext } from "./context";
import { migrationsApplied } from "./database";

/** Liveness and readiness for load balancers and orchestrators. */
export function healthRoutes(ctx: AppContext) {
  return new Elysia({ name: "health" })
    .use(ctx.access)
    .get("/healthz", () => ({ status: "ok" }), { access: "public" })
    .get(
      "/readyz",
      async ({ set }) => {
        const database = await ctx.database.sql`select 1`.then(
          () => true,
          () => false,
        );
        const migrations = database && (await migrationsApplied(ctx.database));
        const worker = runsWorker(ctx.config) ? ctx.workerRunning() : "not in this role";
        const ready = database && migrations && worker !== false;
        set.status = ready ? 200 : 503;
        return {
          status: ready ? "ready" : "not_ready",
          role: ctx.config.role,
          checks: { database, migrations, worker },
        };
      },
      { access: "public" },
    );
}
