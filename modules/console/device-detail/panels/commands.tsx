// Commands tab: the device's command history, newest first, with Cancel for queued ones.
import { Badge, PostButton, Time } from "../../../../ui/components";
import type { PageContext } from "../../../../ui/layout";
import { type Column, DataTable } from "../../../../ui/table";
import {
  type Command,
  commandScript,
  runScriptOutput,
  type UnmatchedReason,
  type UnmatchedResult,
} from "../../../commands/service";
import { Json } from "../json";
import { tabUrl } from "../links";
import type { DeviceDetailProps } from "../props";
import { RunOutput } from "./run-once";

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

/** An agent older than a command type answers it so: said plainly, with what to do. */
const UNSUPPORTED = /^unsupported command: /;

function CommandResult({ command }: { command: Pick<Command, "error" | "output"> & { type?: string } }) {
  return (
    <div>
      {command.error ? (
        <span class="field-error" safe>
          {command.error}
        </span>
      ) : (
        ""
      )}
      {command.error && UNSUPPORTED.test(command.error) ? (
        <div class="muted small">This device's agent is older than this command: upgrade the agent.</div>
      ) : (
        ""
      )}
      {command.type === "run_script" && runScriptOutput(command.output) ? (
        <RunOutput command={command} />
      ) : command.output !== null && command.output !== undefined ? (
        <details>
          <summary>Output</summary>
          <Json value={command.output} />
        </details>
      ) : command.error ? (
        ""
      ) : (
        <span class="muted">—</span>
      )}
    </div>
  );
}

/** What a command acts on, for people: the script's name, or its arguments. */
function commandSubject(command: Command): string {
  return commandScript(command) ?? command.args.join(" ");
}

const UNMATCHED_WORDS: Record<UnmatchedReason, string> = {
  missing_command_id: "no command id",
  unknown_command: "an id this device was never sent",
  duplicate_command_id: "an id repeated in one post",
};

/**
 * Results the device posted that belong to no command (the agent's `missing_command_id`, an unknown or
 * repeated id): they say something went wrong between server and device, so they are shown, not dropped.
 */
function UnmatchedResults({ unmatched }: { unmatched: { results: UnmatchedResult[]; total: number } }) {
  if (unmatched.total === 0) return "";
  const columns: Column<UnmatchedResult>[] = [
    { header: "Received", render: (result) => <Time value={result.receivedAt} /> },
    {
      header: "Sent with",
      render: (result) =>
        result.commandId ? <code safe>{result.commandId}</code> : <span class="muted">(none)</span>,
    },
    {
      header: "Why unmatched",
      class: "hide-sm",
      render: (result) => <span safe>{UNMATCHED_WORDS[result.reason]}</span>,
    },
    {
      header: "Status",
      render: (result) => (
        <Badge
          tone={result.status === "OK" ? "ok" : "danger"}
          label={result.status === "OK" ? "ok" : "failed"}
        />
      ),
    },
    { header: "Result", class: "result-cell", render: (result) => <CommandResult command={result} /> },
  ];
  const shown = unmatched.results.length;
  return (
    <section class="card" id="unmatched-results">
      <div class="card-head">
        <h2>Results for no command</h2>
        <span class="muted small" safe>
          {shown < unmatched.total ? `newest ${shown} of ${unmatched.total}` : `${unmatched.total} in all`}
        </span>
      </div>
      <p class="muted small">
        The device reported these results, but they match no command it was sent. Its agent may be out of date
        or its command handling broken.
      </p>
      <DataTable
        columns={columns}
        rows={unmatched.results}
        empty=""
        stackOnPhone
        rowAttributes={(result) => ({ "data-unmatched-id": result.id })}
      />
    </section>
  );
}

export function CommandsPanel({ ctx, props }: { ctx: PageContext; props: DeviceDetailProps }) {
  const { commands, next, cursor, unmatched } = props.commands!;
  const { device } = props;
  const columns: Column<Command>[] = [
    {
      header: "Command",
      render: (command) => (
        <div>
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
        </div>
      ),
    },
    { header: "Status", render: (command) => <CommandStatus command={command} /> },
    { header: "Queued", render: (command) => <Time value={command.queuedAt} /> },
    { header: "Delivered", class: "hide-sm", render: (command) => <Time value={command.deliveredAt} /> },
    {
      header: "Finished",
      render: (command) =>
        command.completedAt ? <Time value={command.completedAt} /> : <span class="muted">—</span>,
    },
    { header: "Result", class: "result-cell", render: (command) => <CommandResult command={command} /> },
  ];
  if (props.canManage) {
    columns.push({
      header: "Actions",
      hiddenHeader: true,
      render: (command) =>
        command.status === "queued" ? (
          <PostButton
            action={`/devices/${device.id}/commands/${command.id}/cancel`}
            csrfToken={ctx.csrfToken}
            label="Cancel"
            confirm="Cancel this queued command?"
          />
        ) : (
          ""
        ),
    });
  }
  return (
    <div class="stack">
      <section class="card">
        <div class="card-head">
          <h2>Command history</h2>
          <span class="actions">
            <span class="muted small">newest first</span>
            <a class="btn small" href={`/devices/${device.id}/commands.csv`} download="">
              Export CSV
            </a>
          </span>
        </div>
        <DataTable
          columns={columns}
          rows={commands}
          empty="No commands were sent to this device yet."
          stackOnPhone
          rowAttributes={(command) => ({ "data-command-id": command.id })}
        />
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
      <UnmatchedResults unmatched={unmatched} />
    </div>
  );
}
