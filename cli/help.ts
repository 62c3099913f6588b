import type { Command } from "commander";

/** Adds a closing example to `command --help` (every command has one); returns the command. */
export function example(command: Command, ...lines: string[]): Command {
  return command.addHelpText("after", `\nExample:\n${lines.map((line) => `  $ ${line}`).join("\n")}\n`);
}
