/**
 * What a telemetry field key means: the one place that knows where a field lives in a stored
 * heartbeat. The builder offers option keys `<script>.<field>[.<inner>…]` (the properties of the
 * schema the agent announces, agent/telemetry.ts), and the agent sends each script's output at
 * `scripts.<script>.data.output` of its telemetry, which is what a telemetry event stores. Alert
 * evaluation, reports, rollups and charts all read fields through these functions, so a key means
 * the same value to each of them.
 */

/** The path of a script's output object in a stored payload. */
export function scriptOutputPath(script: string): string[] {
  return ["scripts", script, "data", "output"];
}

/**
 * The payload path a builder option key addresses: `memory.used_pct` →
 * `["scripts", "memory", "data", "output", "used_pct"]`.
 */
export function optionKeyPath(optionKey: string): string[] {
  const [script, ...rest] = optionKey.split(".");
  return [...scriptOutputPath(script!), ...rest];
}

/** The value at a path of a payload (string keys only, never into arrays); undefined if absent. */
export function valueAt(payload: unknown, path: readonly string[]): unknown {
  let node = payload;
  for (const key of path) {
    if (node === null || typeof node !== "object" || Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}
