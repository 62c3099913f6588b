/** A form or query value as text: "" for anything that is not a string (absent, a file, a list). */
export function formText(value: unknown): string {
  return typeof value === "string" ? value : "";
}
