// Run a script once on the device (run_script): the form on the Scripts tab and its output on the
// Commands tab.
import { Badge, CsrfField } from "../../../../ui/components";
import { NumberField, TextAreaField, TextField } from "../../../../ui/form";
import type { PageContext } from "../../../../ui/layout";
import { type Command, RUN_SCRIPT_LIMITS, runScriptOutput } from "../../../commands/service";
import type { RunOnceFormState } from "../props";

export function RunOnceSection(props: {
  ctx: PageContext;
  deviceId: string;
  form: RunOnceFormState | undefined;
}) {
  const values = props.form?.values ?? {};
  const errors = props.form?.errors ?? {};
  const action = `/devices/${props.deviceId}/run-once`;
  return (
    // hx-preserve: a live refresh of the tab keeps the typed script.
    <section class="card" id="run-once" hx-preserve="true">
      <h2>Run a script once</h2>
      <p class="muted small">
        The device runs the script at its next heartbeat, in the same sandbox and with the same limits as its
        installed scripts, and keeps nothing of it. It is JavaScript, not a shell: <code>console.log</code>{" "}
        writes stdout, <code>console.error</code> stderr, and an <code>async function main()</code> can{" "}
        <code>await exec_cmd(…)</code> for programs the device allows. The output appears on the Commands tab.
        Agents run it only when their config has <code>run_script_enabled: true</code>.
      </p>
      <form
        id="run-once-form"
        method="post"
        action={action}
        class="stacked wide"
        hx-post={action}
        hx-target="#run-once-form"
        hx-select="#run-once-form"
        hx-swap="outerHTML"
      >
        <CsrfField token={props.ctx.csrfToken} />
        <TextAreaField
          name="script"
          label="Script"
          value={values.script ?? ""}
          error={errors.script}
          rows={8}
          code
          required
        />
        <TextField
          name="name"
          label="Name (optional)"
          value={values.name ?? ""}
          maxLength={RUN_SCRIPT_LIMITS.nameMax}
          help="Shown in the command history."
          error={errors.name}
        />
        <NumberField
          name="timeout_seconds"
          label="Timeout (optional)"
          value={values.timeout_seconds ?? ""}
          min={RUN_SCRIPT_LIMITS.timeoutMinSeconds}
          max={RUN_SCRIPT_LIMITS.timeoutMaxSeconds}
          unit="seconds"
          optional
          help="Empty: the device's script timeout."
          error={errors.timeout_seconds}
        />
        <div class="actions">
          <button class="btn primary" type="submit">
            Run once
          </button>
        </div>
      </form>
    </section>
  );
}

/** A run_script's answer: exit code, duration, stdout and stderr (escaped, in a pre each). */
export function RunOutput({ command }: { command: Pick<Command, "error" | "output"> }) {
  const output = runScriptOutput(command.output);
  if (!output) return "";
  const cut = `(cut at ${RUN_SCRIPT_LIMITS.streamMaxBytes / 1024} KiB)`;
  return (
    <div class="run-output" data-run-output>
      <Badge tone={output.exit_code === 0 ? "ok" : "danger"} label={`exit code ${output.exit_code}`} />{" "}
      <span class="muted small" safe>{`${output.duration_ms} ms`}</span>
      {(["stdout", "stderr"] as const).map((stream) =>
        output[stream] === "" ? (
          ""
        ) : (
          <>
            <div class="muted small">{output[`${stream}_truncated`] ? `${stream} ${cut}` : stream}</div>
            <pre class="json" data-stream={stream} safe>
              {output[stream]}
            </pre>
          </>
        ),
      )}
    </div>
  );
}
