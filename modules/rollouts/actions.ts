// What each rollout action does to a device: a command it is sent (its result arrives later), or a
// change applied at once through the owning feature's service. One entry per action type.
import { checkScript, runnableScript, validateCommand } from "../commands/service";
import { approveDevices, deviceNames, rejectDevices, revokeDevice } from "../devices/service";
import { addTags, removeTags } from "../fleet/service";
import type { Sql } from "../platform/database";
import { AppError } from "../platform/errors";
import type { RolloutAction, RolloutActionType } from "./model";

type ActionOf<K extends RolloutActionType> = Extract<RolloutAction, { type: K }>;

/** The command a device is sent, as modules/commands queues it. */
export interface CommandSpec {
  type: string;
  args?: string[];
  payload?: Record<string, unknown>;
}

/** Actions carried out by a command (its type checked by validateCommand before anything is created). */
const COMMAND_ACTIONS: { [K in RolloutActionType]?: (action: ActionOf<K>) => CommandSpec } = {
  install_script: (action) => {
    const script = checkScript(action.script);
    return {
      type: "install_script",
      payload: { name: script.name, data: script.source, content_type: "application/javascript" },
    };
  },
  remove_script: (action) => ({ type: "remove_script", args: [action.name] }),
  run_script: (action) => ({
    type: "run_script",
    payload: { data: action.script, name: action.name, timeout_seconds: action.timeout_seconds },
  }),
};

/** The command of a command action, or undefined for an action applied at once. */
export function commandOf(action: RolloutAction): CommandSpec | undefined {
  const build = COMMAND_ACTIONS[action.type] as ((a: RolloutAction) => CommandSpec) | undefined;
  return build?.(action);
}

/** Refuses (400) an action that could never succeed, before anything is created. */
export function checkAction(action: RolloutAction): void {
  const command = commandOf(action);
  if (command) validateCommand(command);
}

/** A one-line description of an action (the default name of a rollout, the console's lists). */
export function describeAction(action: RolloutAction): string {
  switch (action.type) {
    case "add_tag":
      return `Add tag ${action.tag.key}=${action.tag.value}`;
    case "remove_tag":
      return `Remove tag ${action.key}`;
    case "install_script":
      return `Install ${commandOf(action)?.payload?.name}`;
    case "remove_script":
      return `Remove ${action.name}`;
    case "run_script":
      return `Run ${action.name ?? runnableScript(action.script).name ?? "a script"} once`;
    default:
      return action.type[0]!.toUpperCase() + action.type.slice(1);
  }
}

export interface DeviceOutcome {
  state: "succeeded" | "failed" | "skipped";
  error?: string;
}

const GONE: DeviceOutcome = { state: "skipped", error: "The device no longer exists" };

/** Outcomes for `ids`: those in `done` succeeded, the others get `otherwise`. */
function outcomes(
  ids: string[],
  done: Iterable<string>,
  otherwise: DeviceOutcome,
): Map<string, DeviceOutcome> {
  const succeeded = new Set(done);
  return new Map(ids.map((id) => [id, succeeded.has(id) ? { state: "succeeded" } : otherwise]));
}

/** Applies a state action (approve, reject, revoke, tags) to these devices at once; one outcome each. */
export async function applyStateAction(
  sql: Sql,
  action: RolloutAction,
  ids: string[],
  options: { onlineWindowSeconds: number },
): Promise<Map<string, DeviceOutcome>> {
  const existing = [...(await deviceNames(sql, ids)).keys()];
  const present = new Set(existing);
  const result = new Map<string, DeviceOutcome>(ids.filter((id) => !present.has(id)).map((id) => [id, GONE]));
  if (existing.length === 0) return result;
  const add = (map: Map<string, DeviceOutcome>) => {
    for (const [id, outcome] of map) result.set(id, outcome);
    return result;
  };
  const notPending: DeviceOutcome = { state: "skipped", error: "Not pending: already approved or rejected" };
  switch (action.type) {
    case "approve":
      return add(outcomes(existing, await approveDevices(sql, existing), notPending));
    case "reject":
      return add(outcomes(existing, await rejectDevices(sql, existing), notPending));
    case "revoke":
      for (const id of existing) result.set(id, await revokeOne(sql, id, options));
      return result;
    case "add_tag":
      return add(await addTagEach(sql, existing, action.tag));
    case "remove_tag":
      await removeTags(sql, existing, [action.key]);
      return add(outcomes(existing, existing, GONE));
    default:
      throw new Error(`${action.type} is carried out by a command`);
  }
}

async function revokeOne(sql: Sql, id: string, options: { onlineWindowSeconds: number }) {
  try {
    return (await revokeDevice(sql, id, options)) ? ({ state: "succeeded" } as const) : GONE;
  } catch (error) {
    if (error instanceof AppError && error.status === 409)
      return { state: "skipped" as const, error: error.message };
    throw error;
  }
}

/** All at once; when one device would pass its tag limit (the batch is refused whole), one by one. */
async function addTagEach(sql: Sql, ids: string[], tag: { key: string; value: string }) {
  try {
    return outcomes(ids, await addTags(sql, ids, [tag]), GONE);
  } catch (error) {
    if (!(error instanceof AppError) || ids.length === 1) throw error;
    const result = new Map<string, DeviceOutcome>();
    for (const id of ids) {
      try {
        result.set(id, (await addTags(sql, [id], [tag])).length > 0 ? { state: "succeeded" } : GONE);
      } catch (single) {
        if (!(single instanceof AppError)) throw single;
        result.set(id, { state: "failed", error: single.message });
      }
    }
    return result;
  }
}
