// The device page's script actions: list and remove (commands), install, run once.
import { Elysia } from "elysia";
import { type Command, commandScript, installableScript, SCRIPT_MAX_BYTES } from "../../commands/service";
import type { AppContext } from "../../platform/context";
import { AppError } from "../../platform/errors";
import { deviceDetailContext } from "./context";
import { tabUrl } from "./links";
import { DevicePathParams, RunOnceForm, ScriptCommandForm, ScriptForm } from "./model";
import { DeviceDetailPage } from "./page";

export function deviceScriptRoutes(ctx: AppContext) {
  const { pageContext, htmlPage, redirectWithFlash, detailProps, loadDevice, queue } =
    deviceDetailContext(ctx);
  return new Elysia({ name: "device-detail-scripts" })
    .use(ctx.access)
    .post(
      "/devices/:id/commands",
      async ({ params, principal, body, request }) => {
        const device = await loadDevice(params.id);
        const { type } = body;
        if (type === "list_scripts") {
          await queue(request, device, principal, { type });
          return redirectWithFlash(tabUrl(device.id, "scripts"), {
            kind: "success",
            text: device.online
              ? "Asked the device for its scripts: the answer appears here after its next heartbeat."
              : "Queued: the device is offline and answers when it checks in again.",
          });
        }
        if (type === "remove_script") {
          const name = (body.name ?? "").trim();
          try {
            await queue(request, device, principal, { type, args: [name], payload: { name } }, { name });
          } catch (refused) {
            if (!(refused instanceof AppError) || refused.status !== 400) throw refused;
            return redirectWithFlash(tabUrl(device.id, "scripts"), {
              kind: "error",
              text: "That script name is not valid.",
            });
          }
          return redirectWithFlash(tabUrl(device.id, "commands"), {
            kind: "success",
            text: `Removal of "${name}" queued for the device's next heartbeat.`,
          });
        }
        return redirectWithFlash(tabUrl(device.id, "scripts"), {
          kind: "error",
          text: "Only list_scripts and remove_script can be queued from here.",
        });
      },
      { access: "operator", params: DevicePathParams, body: ScriptCommandForm },
    )
    .post(
      "/devices/:id/scripts",
      async ({ request, params, principal, body }) => {
        const device = await loadDevice(params.id);
        const file = body.file && body.file.size > 0 ? body.file : undefined;
        let source = body.text ?? "";
        let error: string | undefined;
        let script: { name: string; source: string } | undefined;
        if (!file && source.trim() === "") error = "Choose a script file or paste the script.";
        else {
          try {
            script = await installableScript(file ?? source);
          } catch (refused) {
            if (!(refused instanceof AppError)) throw refused;
            error = refused.message;
            // Shown again for correction, unless it is too large to.
            source =
              (file?.size ?? Buffer.byteLength(source)) > SCRIPT_MAX_BYTES
                ? ""
                : file
                  ? await file.text()
                  : source;
          }
        }
        if (!script) {
          // Sent by htmx, the form is swapped in place: the address stays the device page, so a
          // reload does not post the script again.
          const page = pageContext(request, principal);
          const props = await detailProps(principal, device, "scripts", {});
          props.scripts!.values = { text: source };
          props.scripts!.errors = { text: error };
          return htmlPage(page, <DeviceDetailPage ctx={page} props={props} />, 422);
        }
        await queue(
          request,
          device,
          principal,
          {
            type: "install_script",
            payload: { name: script.name, data: script.source, content_type: "application/javascript" },
          },
          { name: script.name },
        );
        return redirectWithFlash(
          tabUrl(device.id, "commands"),
          {
            kind: "success",
            text: `Install of "${script.name}" queued: the device installs it on its next heartbeat.`,
          },
          request,
        );
      },
      { access: "operator", params: DevicePathParams, body: ScriptForm },
    )
    .post(
      "/devices/:id/run-once",
      async ({ request, params, principal, body }) => {
        const device = await loadDevice(params.id);
        const values = {
          script: body.script ?? "",
          name: body.name ?? "",
          timeout_seconds: body.timeout_seconds ?? "",
        };
        const timeout = values.timeout_seconds.trim();
        let command: Command;
        try {
          command = await queue(request, device, principal, {
            type: "run_script",
            payload: {
              data: values.script,
              name: values.name.trim() || undefined,
              timeout_seconds: timeout === "" ? undefined : Number(timeout),
            },
          });
        } catch (refused) {
          if (!(refused instanceof AppError) || refused.status >= 500) throw refused;
          // As the install form: swapped in place by htmx, the script kept for correction.
          const field = String((refused.details as { field?: string } | undefined)?.field ?? "");
          const key = field.endsWith("name")
            ? "name"
            : field.endsWith("timeout_seconds")
              ? "timeout_seconds"
              : "script";
          const page = pageContext(request, principal);
          const props = await detailProps(principal, device, "scripts", {});
          props.scripts!.runOnce = { values, errors: { [key]: refused.message } };
          return htmlPage(page, <DeviceDetailPage ctx={page} props={props} />, 422);
        }
        const what = commandScript(command) ? `"${commandScript(command)}"` : "The script";
        return redirectWithFlash(
          tabUrl(device.id, "commands"),
          {
            kind: "success",
            text: `${what} is queued to run once: its output appears here after the device's next heartbeat.`,
          },
          request,
        );
      },
      { access: "operator", params: DevicePathParams, body: RunOnceForm },
    );
}
