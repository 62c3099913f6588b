/** Error categories reported for a script run. */
export type ScriptErrorType = "syntax" | "execution" | "validation" | "timeout" | "io";

export interface ScriptError {
  type: ScriptErrorType;
  message: string;
  details?: { simple: string; verbose: string };
}

/** A script file that is not well formed (front matter, name, version, schema). */
export class ScriptFormatError extends Error {
  override name = "ScriptFormatError";
}
