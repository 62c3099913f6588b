/** A configuration problem, said in one line naming the key or variable. */
export class ConfigError extends Error {
  override name = "ConfigError";
}
