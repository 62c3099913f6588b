import { Elysia } from "elysia";
import type { AppContext } from "../../platform/context";
import { deviceListRoutes } from "./list/routes";
import { deviceNewRoutes } from "./new/routes";

/** The devices feature's own console pages: the device list and Add device. */
export function devicePageRoutes(ctx: AppContext) {
  return new Elysia({ name: "device-pages" }).use(deviceListRoutes(ctx)).use(deviceNewRoutes(ctx));
}
