import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { allowedExpect } from "./registry";

export interface JourneyStep {
  action: string;
  expect: string;
  /** Display label; defaults to the action. */
  stepId: string;
}

export interface JourneySpec {
  id: string;
  description: string;
  steps: JourneyStep[];
  file: string;
}

/** A journey file that cannot be used; `message` says why in one sentence. */
export class JourneyError extends Error {
  override name = "JourneyError";
}

const JOURNEY_ID = /^[a-z0-9_]+$/;

export function journeyFile(journeysDir: string, journeyId: string): string {
  if (!JOURNEY_ID.test(journeyId)) throw new JourneyError(`Journey id '${journeyId}' is not valid.`);
  return path.join(journeysDir, `${journeyId}.yaml`);
}

/** Reads and checks the shape of `<journeysDir>/<journeyId>.yaml` (not the registry). */
export function loadJourney(journeysDir: string, journeyId: string): JourneySpec {
  const file = journeyFile(journeysDir, journeyId);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new JourneyError(`Journey file for '${journeyId}' was not found at ${path.basename(file)}.`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (error) {
    throw new JourneyError(
      `Journey '${journeyId}' is not valid YAML: ${(error as Error).message.split("\n")[0]}`,
    );
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    throw new JourneyError(`Journey '${journeyId}' must be a mapping with id, description and steps.`);
  }
  const record = doc as Record<string, unknown>;
  if (record.id !== undefined && record.id !== journeyId) {
    throw new JourneyError(
      `Journey file ${path.basename(file)} declares id '${String(record.id)}', expected '${journeyId}'.`,
    );
  }
  if (!Array.isArray(record.steps) || record.steps.length === 0) {
    throw new JourneyError(`Journey '${journeyId}' has no steps to validate.`);
  }
  const steps: JourneyStep[] = record.steps.map((raw, index) => {
    const step = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
    const action = typeof step.action === "string" ? step.action.trim() : "";
    const expect = typeof step.expect === "string" ? step.expect.trim() : "";
    if (!action) throw new JourneyError(`Journey '${journeyId}' step ${index + 1} has no action.`);
    if (!expect)
      throw new JourneyError(`Journey '${journeyId}' action '${action}' is missing an expect token.`);
    const stepId = typeof step.step_id === "string" && step.step_id.trim() ? step.step_id.trim() : action;
    return { action, expect, stepId };
  });
  return {
    id: journeyId,
    description: typeof record.description === "string" ? record.description : "",
    steps,
    file,
  };
}

/** Loads a journey and checks every step against the action/expect registry. */
export function validateJourney(journeysDir: string, journeyId: string): JourneySpec {
  const spec = loadJourney(journeysDir, journeyId);
  for (const step of spec.steps) {
    const allowed = allowedExpect(step.action);
    if (allowed === undefined) {
      throw new JourneyError(`Journey '${journeyId}' action '${step.action}' is not supported.`);
    }
    if (allowed !== step.expect) {
      throw new JourneyError(
        `Journey '${journeyId}' action '${step.action}' does not allow expect '${step.expect}'.`,
      );
    }
  }
  return spec;
}

const descriptions = new Map<string, { mtimeMs: number; description: string }>();

/** A journey's description for display, or "" when its file cannot be read (kept until the file changes). */
export function journeyDescription(journeysDir: string, journeyId: string): string {
  if (!JOURNEY_ID.test(journeyId)) return "";
  const file = journeyFile(journeysDir, journeyId);
  const mtimeMs = statSync(file, { throwIfNoEntry: false })?.mtimeMs;
  if (mtimeMs === undefined) return "";
  const known = descriptions.get(file);
  if (known?.mtimeMs === mtimeMs) return known.description;
  let description = "";
  try {
    description = loadJourney(journeysDir, journeyId).description;
  } catch {}
  descriptions.set(file, { mtimeMs, description });
  return description;
}
