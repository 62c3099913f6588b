// The new-rollout form (`/rollouts/new`): the devices (from the device list's selection, query or
// view), the action, and the waves' settings; an overlap with active rollouts is shown and asked about.
import { assetUrl } from "../../../ui/assets";
import { CsrfField, PageHead } from "../../../ui/components";
import { CheckboxField, Hidden, SelectField, TextAreaField, TextField } from "../../../ui/form";
import { Layout, type PageContext } from "../../../ui/layout";
import { Card } from "../../../ui/table";
import type { Overlap } from "../create";
import { ACTION_LABELS, type RolloutFormValues } from "../form";
import { DEADLINE_MAX_HOURS } from "../model";

export interface NewRolloutProps {
  values: RolloutFormValues;
  /** A refusal: its message and the field it names. */
  error?: { message: string; field?: string };
  overlap?: Overlap;
}

interface TextFieldSpec {
  name: "tag" | "script_name" | "canary" | "concurrency" | "failure_threshold" | "deadline_hours";
  label: string;
  help?: string;
  maxLength: number;
}

/** The waves' settings: text fields alike but for what they say. */
const WAVE_FIELDS: TextFieldSpec[] = [
  {
    name: "canary",
    label: "Canary",
    help: "The first wave: a number of devices (10) or a percentage (5%); 0 for no canary. The rest follows once every canary device has finished.",
    maxLength: 10,
  },
  {
    name: "concurrency",
    label: "Concurrency",
    help: "At most this many devices in flight at once (sent, no result yet).",
    maxLength: 6,
  },
  {
    name: "failure_threshold",
    label: "Failure threshold (%)",
    help: "The rollout pauses when more than this share of a wave's devices failed.",
    maxLength: 3,
  },
  {
    name: "deadline_hours",
    label: "Deadline (hours from now)",
    help: `Offline devices are retried until then, then reported as skipped (at most ${DEADLINE_MAX_HOURS} hours).`,
    maxLength: 4,
  },
];

/** The fields that show their own error; any other refusal shows above the form. */
const FIELDS_WITH_ERRORS = new Set<string>([
  "action",
  "tag",
  "script",
  "script_name",
  ...WAVE_FIELDS.map((field) => field.name),
]);

function targetText(values: RolloutFormValues): string {
  if (values.ids.length > 0)
    return `${values.ids.length} selected device${values.ids.length === 1 ? "" : "s"}`;
  const parts = [values.view ? `view "${values.view}"` : "", values.q ? `query ${values.q}` : ""].filter(
    Boolean,
  );
  return parts.length > 0
    ? `Every device of ${parts.join(" and ")}, as it matches when you start`
    : "No devices chosen";
}

function OverlapNote({ overlap }: { overlap: Overlap }) {
  return (
    <div class="flash error" role="alert" id="rollout-overlap">
      <p safe>{`${overlap.count} of these devices are still to be acted on by another active rollout:`}</p>
      <ul>
        {overlap.rollouts.map((rollout) => (
          <li>
            <a href={`/rollouts/${rollout.id}`} safe>
              {rollout.name}
            </a>
          </li>
        ))}
      </ul>
      <p class="mono small" safe>
        {overlap.device_ids.join(" ")}
      </p>
      <CheckboxField name="confirm_overlap" value="yes">
        Start anyway: both rollouts act on these devices
      </CheckboxField>
    </div>
  );
}

export function NewRolloutPage({ ctx, props }: { ctx: PageContext; props: NewRolloutProps }) {
  const { values, error } = props;
  const errorOf = (field: string) => (error?.field === field ? error.message : undefined);
  /** A text field with its value and its own error. */
  const field = (spec: TextFieldSpec) => (
    <TextField {...spec} value={values[spec.name]} error={errorOf(spec.name)} />
  );
  return (
    <Layout ctx={ctx} title="New rollout">
      <script src={assetUrl("rollouts.js")} defer></script>
      <PageHead title="New rollout" subtitle={targetText(values)}>
        <a class="btn" href="/rollouts">
          Rollouts
        </a>
      </PageHead>
      <form method="post" action="/rollouts" class="stack rollout-form" id="rollout-form">
        <CsrfField token={ctx.csrfToken} />
        <Hidden name="q" value={values.q} />
        <Hidden name="view" value={values.view} />
        {values.ids.map((id) => (
          <Hidden name="ids" value={id} />
        ))}
        {error && !FIELDS_WITH_ERRORS.has(error.field ?? "") ? (
          <div class="flash error" role="alert" safe>
            {error.message}
          </div>
        ) : (
          ""
        )}
        {props.overlap ? <OverlapNote overlap={props.overlap} /> : ""}
        <Card title="Action">
          <SelectField
            name="action"
            label="Action"
            value={values.action}
            options={Object.entries(ACTION_LABELS).map(([value, label]) => ({ value, label }))}
            error={errorOf("action")}
            attributes={{ "data-rollout-action": true }}
          />
          <div data-for-actions="add_tag remove_tag">
            {field({ name: "tag", label: "Tag (key=value to add, key to remove)", maxLength: 400 })}
          </div>
          <div data-for-actions="install_script run_script">
            <TextAreaField
              name="script"
              label="Script (to install, or to run once: its output is each device's result)"
              value={values.script}
              error={errorOf("script")}
              rows={8}
              code
            />
          </div>
          <div data-for-actions="remove_script">
            {field({ name: "script_name", label: "Script to remove (its name)", maxLength: 128 })}
          </div>
          <TextField
            name="name"
            label="Name (optional)"
            value={values.name}
            maxLength={100}
            help="Default: the action"
          />
        </Card>
        <Card title="Waves">{WAVE_FIELDS.map(field)}</Card>
        <div class="actions">
          <button class="btn primary" type="submit">
            Start rollout
          </button>
        </div>
      </form>
    </Layout>
  );
}
