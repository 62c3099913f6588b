// Commands tab: the device's command history, newest first, with Cancel for queued ones.
import { Badge, PostButton, Time } from "../../../../ui/components";
import type { PageContext } from "../../../../ui/layout";
import type { Command } from "../../../commands/service";
import { Json } from "../json";
import { tabUrl } from "../links";
import type { DeviceDetailProps } from "../props";
import { PanelTable } from "../table";

function CommandStatus({ command }: { command: Command }) {
  const tone =
    command.status === "succeeded"
      ? "ok"
      : command.status === "failed"
        ? "danger"
        : command.status === "expired"
          ? "warn"
          : "info";
  return <Badge tone={tone} label={command.status} />;
}

/** What a command acts on, for people: the script's name, or its arguments. */
function commandSubject(command: Command): string {
  const name = command.payload?.name;
  if ((command.type === "install_script" || command.type === "remove_script") && typeof name === "string")
    return name;
  return command.args.join(" ");
}

export function CommandsPanel({ ctx, props }: { ctx: PageContext; props: DeviceDetailProps }) {
  const { commands, next, cursor } = props.commands!;
  const { device } = props;
  return (
    <section class="card">
      <div class="card-head">
        <h2>Command history</h2>
        <span class="muted small">newest first</span>
      </div>
      {commands.length === 0 ? (
        <p class="muted">No commands were sent to this device yet.</p>
      ) : (
        <PanelTable
          columns={[
            "Command",
            "Status",
            "Queued",
            { label: "Delivered", class: "hide-sm" },
            "Finished",
            "Result",
          ]}
          actions={props.canManage}
        >
          <tbody>
            {commands.map((command) => (
              <tr data-command-id={command.id}>
                <td>
                  <code>{command.type}</code>
                  {commandSubject(command) ? (
                    <span class="command-subject" safe>
                      {` ${commandSubject(command)}`}
                    </span>
                  ) : (
                    ""
                  )}
                  {command.queuedBy ? (
                    <div class="muted small" safe>
                      {`by ${command.queuedBy}`}
                    </div>
                  ) : (
                    ""
                  )}
                </td>
                <td>
                  <CommandStatus command={command} />
                </td>
                <td>
                  <Time value={command.queuedAt} />
                </td>
                <td class="hide-sm">
                  <Time value={command.deliveredAt} />
                </td>
                <td>
                  {command.completedAt ? <Time value={command.completedAt} /> : <span class="muted">—</span>}
                </td>
                <td class="result-cell">
                  {command.error ? (
                    <span class="field-error" safe>
                      {command.error}
                    </span>
                  ) : (
                    ""
                  )}
                  {command.output !== null && command.output !== undefined ? (
                    <details>
                      <summary>Output</summary>
                      <Json value={command.output} />
                    </details>
                  ) : command.error ? (
                    ""
                  ) : (
                    <span class="muted">—</span>
                  )}
                </td>
                {props.canManage ? (
                  <td>
                    {command.status === "queued" ? (
                      <PostButton
                        action={`/devices/${device.id}/commands/${command.id}/cancel`}
                        csrfToken={ctx.csrfToken}
                        label="Cancel"
                        confirm="Cancel this queued command?"
                      />
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
      )}
      <nav class="pager" aria-label="Command pages">
        <span />
        <span class="actions">
          {cursor ? (
            <a class="btn small" href={tabUrl(device.id, "commands")}>
              Newest
            </a>
          ) : (
            ""
          )}
          {next ? (
            <a class="btn small" href={tabUrl(device.id, "commands", `cursor=${encodeURIComponent(next)}`)}>
              Older →
            </a>
          ) : (
            ""
          )}
        </span>
      </nav>
    </section>
  );
}
