// Scripts tab: what the device reports running, its installed list on demand, install and remove.
import { Badge, CsrfField, FieldError, PostButton, Time } from "../../../../ui/components";
import { FileField, TextAreaField } from "../../../../ui/form";
import type { PageContext } from "../../../../ui/layout";
import type { DeviceDetailProps } from "../props";
import { PanelTable } from "../table";
import { RunOnceSection } from "./run-once";

export function ScriptsPanel({ ctx, props }: { ctx: PageContext; props: DeviceDetailProps }) {
  const scripts = props.scripts!;
  const { device } = props;
  const errors = scripts.errors ?? {};
  return (
    <div class="stack">
      <section class="card">
        <div class="card-head">
          <h2>Installed scripts</h2>
          {props.canManage ? (
            <PostButton
              action={`/devices/${device.id}/commands`}
              csrfToken={ctx.csrfToken}
              label="Ask the device for its list"
              fields={{ type: "list_scripts" }}
            />
          ) : (
            ""
          )}
        </div>
        {scripts.pendingList ? (
          <p class="flash info" role="status">
            A <code>list_scripts</code> request is{" "}
            {scripts.pendingList.status === "queued" ? "queued" : "delivered"} (
            <Time value={scripts.pendingList.queuedAt} />
            ). The list below updates when the device answers.
          </p>
        ) : (
          ""
        )}
        {scripts.listing ? (
          <>
            <p class="muted small">
              As listed by the device <Time value={scripts.listing.command.completedAt} />.
            </p>
            <PanelTable
              columns={["Script", "Version", "State", { label: "Path", class: "hide-sm" }]}
              actions={props.canManage}
            >
              <tbody data-scripts-list>
                {scripts.listing.scripts.map((script) => (
                  <tr>
                    <td safe>{script.name}</td>
                    <td class="mono" safe>
                      {script.version}
                    </td>
                    <td>
                      {script.active ? <Badge tone="ok" label="active" /> : <Badge label="older version" />}
                    </td>
                    <td class="mono small hide-sm" safe>
                      {script.path}
                    </td>
                    {props.canManage ? (
                      <td>
                        {script.active ? (
                          <RemoveScript ctx={ctx} deviceId={device.id} name={script.name} />
                        ) : (
                          ""
                        )}
                      </td>
                    ) : (
                      ""
                    )}
                  </tr>
                ))}
              </tbody>
            </PanelTable>
          </>
        ) : (
          <p class="muted">
            The device has not listed its scripts yet
            {props.canManage ? ": ask it with the button above." : "."}
          </p>
        )}
      </section>
      <section class="card">
        <h2>Reported in the last heartbeat</h2>
        {scripts.reported.length === 0 ? (
          <p class="muted">No script results in the last heartbeat.</p>
        ) : (
          <PanelTable
            columns={["Script", "Run", "Output", { label: "Duration", class: "num" }, "Error"]}
            actions={props.canManage && !scripts.listing}
          >
            <tbody>
              {scripts.reported.map((script) => (
                <tr>
                  <td safe>{script.name}</td>
                  <td>
                    <Badge tone={script.status === "success" ? "ok" : "danger"} label={script.status} />
                  </td>
                  <td>
                    {script.validation ? (
                      <Badge
                        tone={script.validation === "invalid" ? "warn" : undefined}
                        label={script.validation}
                      />
                    ) : (
                      ""
                    )}
                  </td>
                  <td class="num" safe>
                    {script.durationMs === undefined ? "—" : `${script.durationMs} ms`}
                  </td>
                  <td class="small" safe>
                    {script.error ?? ""}
                  </td>
                  {props.canManage && !scripts.listing ? (
                    <td>
                      <RemoveScript ctx={ctx} deviceId={device.id} name={script.name} />
                    </td>
                  ) : (
                    ""
                  )}
                </tr>
              ))}
            </tbody>
          </PanelTable>
        )}
      </section>
      {props.canManage ? (
        // hx-preserve: a live refresh of the tab keeps the form as it is (typed text, a chosen file).
        <section class="card" id="install-script" hx-preserve="true">
          <h2>Install a script</h2>
          <p class="muted small">
            The device installs the script on its next heartbeat and runs it on every poll. Scripts run
            sandboxed on the device. The script starts with its front matter (
            <code>{"/*--- name: … version: … ---*/"}</code>); a newer version of an installed script replaces
            it.
          </p>
          <FieldError message={errors.form} />
          {/* The section is hx-preserve'd against live refreshes, so a refused post swaps only the form. */}
          <form
            id="install-script-form"
            method="post"
            action={`/devices/${device.id}/scripts`}
            enctype="multipart/form-data"
            class="stacked wide"
            hx-post={`/devices/${device.id}/scripts`}
            hx-encoding="multipart/form-data"
            hx-target="#install-script-form"
            hx-select="#install-script-form"
            hx-swap="outerHTML"
          >
            <CsrfField token={ctx.csrfToken} />
            <FileField name="file" label="Script file" accept=".js,.mjs,text/javascript,text/plain" />
            <TextAreaField
              name="text"
              label="…or paste the script"
              value={scripts.values?.text ?? ""}
              error={errors.text}
              rows={8}
              code
            />
            <div class="actions">
              <button class="btn primary" type="submit">
                Queue install
              </button>
            </div>
          </form>
        </section>
      ) : (
        ""
      )}
      {props.canManage ? <RunOnceSection ctx={ctx} deviceId={device.id} form={scripts.runOnce} /> : ""}
    </div>
  );
}

function RemoveScript({ ctx, deviceId, name }: { ctx: PageContext; deviceId: string; name: string }) {
  return (
    <PostButton
      action={`/devices/${deviceId}/commands`}
      csrfToken={ctx.csrfToken}
      label="Remove"
      tone="danger"
      confirm={`Remove the script "${name}" from the device?`}
      fields={{ type: "remove_script", name }}
    />
  );
}
