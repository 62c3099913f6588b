import { Elysia } from "elysia";
import type { AppContext } from "../platform/context";
import { dashboardRoutes } from "./dashboard/routes";
import { deviceDetailRoutes } from "./device-detail/routes";
import { deviceScriptRoutes } from "./device-detail/script-routes";

/**
 * The console's pages that combine features: the dashboard and the device page (devices, telemetry,
 * commands, through their services). The device list and Add device belong to devices/pages.
 */
export function consoleRoutes(ctx: AppContext) {
  return new Elysia({ name: "console" })
    .use(dashboardRoutes(ctx))
    .use(deviceDetailRoutes(ctx))
    .use(deviceScriptRoutes(ctx));
}
