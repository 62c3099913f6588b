import { Elysia } from "elysia";
import type { PageContext } from "../../../../ui/layout";
import { consolePages } from "../../../../ui/page";
import { noteAudit } from "../../../audit/service";
import { installAdvice } from "../../../enrolment/service";
import type { AppContext } from "../../../platform/context";
import { AppError } from "../../../platform/errors";
import { NewDeviceForm } from "../../model";
import { preRegisterDevice } from "../../pre-authorisation";
import { DeviceNewPage, type DeviceNewProps } from "./page";

/** Add device (`/devices/new`): pre-registers a MAC, optionally approved, and shows its claim token once. */
export function deviceNewRoutes(ctx: AppContext) {
  const { pageContext, htmlPage } = consolePages(ctx.config);
  const { config, database } = ctx;
  const render = (page: PageContext, props: Omit<DeviceNewProps, "baseUrl">, status = 200) =>
    htmlPage(
      page,
      <DeviceNewPage
        ctx={page}
        props={{ ...props, baseUrl: config.baseUrl, installAdvice: installAdvice(config) }}
      />,
      status,
    );

  return new Elysia({ name: "device-new-page" })
    .use(ctx.access)
    .get("/devices/new", ({ request, principal }) => render(pageContext(request, principal), {}), {
      access: "operator",
    })
    .post(
      "/devices",
      async ({ request, principal, body }) => {
        const values = {
          mac_address: (body.mac_address ?? "").trim(),
          product_name: (body.product_name ?? "").trim(),
          name: (body.name ?? "").trim(),
          approved: ["on", "true", "1"].includes(body.approved ?? ""),
        };
        try {
          const created = await preRegisterDevice(database.sql, {
            macAddress: values.mac_address,
            productName: values.product_name,
            name: values.name,
            approved: values.approved,
          });
          noteAudit(request, { target: `device:${created.id}` });
          const page = pageContext(request, principal);
          return render(page, { created: { ...created, approved: values.approved } }, 201);
        } catch (error) {
          if (!(error instanceof AppError) || (error.status !== 400 && error.status !== 409)) throw error;
          const field = (error.details as { field?: string } | undefined)?.field;
          const key = field === "product_name" || field === "name" ? field : "mac_address";
          const message =
            key === "mac_address" && error.status === 400
              ? "Enter a MAC address such as AA:BB:CC:DD:EE:FF (colons, dashes or none)."
              : error.message;
          const page = pageContext(request, principal);
          return render(page, { values, errors: { [key]: message } }, error.status);
        }
      },
      { access: "operator", body: NewDeviceForm },
    );
}
