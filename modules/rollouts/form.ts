// The console's new-rollout form: what it posts, read into the API's body (the one set of rules,
// createRollout's), or the field it cannot read.
import { tagFromText } from "../fleet/service";
import { badRequest } from "../platform/errors";
import { formList } from "../platform/schemas";
import { DEFAULT_CONCURRENCY, DEFAULT_DEADLINE_HOURS, DEFAULT_FAILURE_THRESHOLD } from "./create";
import {
  CONCURRENCY_MAX,
  type CreateRolloutBody,
  DEADLINE_MAX_HOURS,
  type RolloutAction,
  type RolloutActionType,
  type RolloutForm,
} from "./model";

/** The actions the form offers, with their labels. */
export const ACTION_LABELS: Record<RolloutActionType, string> = {
  install_script: "Install a script",
  run_script: "Run a script once",
  remove_script: "Remove a script",
  add_tag: "Add a tag",
  remove_tag: "Remove a tag",
  approve: "Approve",
  reject: "Reject",
  revoke: "Revoke",
};

/** The form's values as it shows them again (after an error, or first with the device list's target). */
export interface RolloutFormValues {
  name: string;
  action: string;
  tag: string;
  script: string;
  script_name: string;
  q: string;
  view: string;
  ids: string[];
  canary: string;
  concurrency: string;
  failure_threshold: string;
  deadline_hours: string;
}

export function formValues(form: Partial<RolloutForm> = {}): RolloutFormValues {
  return {
    name: form.name ?? "",
    action: form.action ?? "install_script",
    tag: form.tag ?? "",
    script: form.script ?? "",
    script_name: form.script_name ?? "",
    q: form.q ?? "",
    view: form.view ?? "",
    ids: formList(form.ids)
      .flatMap((id) => id.split(","))
      .filter((id) => id.trim() !== ""),
    canary: form.canary ?? "5%",
    concurrency: form.concurrency ?? String(DEFAULT_CONCURRENCY),
    failure_threshold: form.failure_threshold ?? String(DEFAULT_FAILURE_THRESHOLD),
    deadline_hours: form.deadline_hours ?? String(DEFAULT_DEADLINE_HOURS),
  };
}

function whole(text: string, field: string, label: string, min: number, max: number): number {
  const value = Number(text.trim());
  if (text.trim() === "" || !Number.isInteger(value) || value < min || value > max)
    throw badRequest(`${label} must be a whole number from ${min} to ${max}`, { field });
  return value;
}

function actionOf(values: RolloutFormValues): RolloutAction {
  switch (values.action) {
    case "approve":
    case "reject":
    case "revoke":
      return { type: values.action };
    case "add_tag": {
      const tag = tagFromText(values.tag);
      if (tag.key === "") throw badRequest("Type the tag as key=value", { field: "tag" });
      return { type: "add_tag", tag };
    }
    case "remove_tag":
      if (values.tag.trim() === "") throw badRequest("Type the tag's key", { field: "tag" });
      return { type: "remove_tag", key: tagFromText(values.tag).key };
    case "install_script":
      if (values.script.trim() === "") throw badRequest("Paste the script to install", { field: "script" });
      return { type: "install_script", script: values.script.replaceAll("\r\n", "\n") };
    case "run_script":
      if (values.script.trim() === "") throw badRequest("Paste the script to run", { field: "script" });
      return { type: "run_script", script: values.script.replaceAll("\r\n", "\n") };
    case "remove_script":
      if (values.script_name.trim() === "")
        throw badRequest("Name the script to remove", { field: "script_name" });
      return { type: "remove_script", name: values.script_name.trim() };
    default:
      throw badRequest("Choose an action", { field: "action" });
  }
}

/** The API body the form stands for; 400 naming the field it cannot read. */
export function formBody(values: RolloutFormValues, confirmOverlap: boolean, now: Date): CreateRolloutBody {
  const canary = values.canary.trim();
  const percent = canary.endsWith("%");
  const canaryValue =
    canary === "" ? 0 : whole(canary.replace(/%$/, ""), "canary", "The canary", 0, percent ? 100 : 100_000);
  const hours = whole(values.deadline_hours, "deadline_hours", "The deadline", 1, DEADLINE_MAX_HOURS);
  return {
    name: values.name.trim() || undefined,
    action: actionOf(values),
    target:
      values.ids.length > 0
        ? { ids: values.ids }
        : { q: values.q || undefined, view: values.view || undefined },
    ...(percent ? { canary_percent: canaryValue } : { canary_count: canaryValue }),
    concurrency: whole(values.concurrency, "concurrency", "Concurrency", 1, CONCURRENCY_MAX),
    failure_threshold: whole(values.failure_threshold, "failure_threshold", "The failure threshold", 0, 100),
    deadline: new Date(now.getTime() + hours * 3_600_000).toISOString(),
    confirm_overlap: confirmOverlap,
  };
}
